"""Old import paths of the leaf modules, kept while modules outside this change still use them
(simulator, traces, backends, optimum, job.py). New code imports ``ringsched.utility``; the
objectives themselves live in ``ringsched.experiment.objectives``."""
