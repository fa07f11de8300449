"""The package version, in a leaf module so that any layer can name it without importing the API."""

__version__ = "0.1.0"
