"""The field types of the fact schema (advisor/facts/schema.py)."""

BOOL, NUMBER, STRING = "bool", "number", "string"
