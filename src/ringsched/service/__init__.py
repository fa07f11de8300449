"""The online scheduler service: HTTP API, live page, auth, durable command log.

It sits above ``backends`` (whose controller it drives through a queue of commands,
``backends.online``) and below ``cli`` (``ringsched serve`` and the client verbs).
"""
