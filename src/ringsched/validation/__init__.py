"""The one input-validation layer: every loader and spec parser checks user values here.

* ``bounds``: the range of every number a user can give (``LIMITS``), checked one value at a
  time, a column at a time, or as a pydantic field type;
* ``yaml_doc``: YAML read with a size limit, a node budget (alias bombs), duplicate keys
  refused and the line of every value kept, so errors name the row;
* ``keyvalue``: the ``NAME[,key=value...]`` spec grammar with unknown and repeated keys refused;
* ``paths``: output paths (and ``--state``) checked before any work starts;
* ``files``: every user file opened here first: a regular file (not a folder, pipe or device),
  within a size limit, UTF-8 with an optional byte-order mark; JSON without repeated keys.

Every failure is a :class:`ringsched.errors.InputError` (one line: file, row, field).
"""
