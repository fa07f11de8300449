"""One error type for bad user input: it names the file, row and field, and the CLI turns it
into a single line on stderr and exit code 2 (no traceback)."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from a user-supplied file or option."""

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None,
                 field: str | None = None):
        self.message = message
        self.file = file
        self.row = row
        self.field = field
        super().__init__(self.line())

    def line(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field:
            where.append(f"field '{self.field}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message
