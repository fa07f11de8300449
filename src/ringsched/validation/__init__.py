"""The one input-validation layer: every loader and spec parser checks user values here.

* ``bounds``: the range of every number a user can give (``LIMITS``), checked one value at a
  time, a column at a time, or as a pydantic field type;
* ``yaml_doc``: YAML read with a size limit, a node budget (alias bombs), duplicate keys
  refused and the line of every value kept, so errors name the row;
* ``keyvalue``: the ``NAME[,key=value...]`` spec grammar with unknown and repeated keys refused;
* ``paths``: output paths checked before any work starts.

Every failure is a :class:`ringsched.errors.InputError` (one line: file, row, field).
"""
