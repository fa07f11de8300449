"""A corpus of bad inputs for every command and format, built by code (``corpus.cases``)."""
