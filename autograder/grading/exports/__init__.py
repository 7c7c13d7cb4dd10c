"""Exports of a gradebook for other systems, as nbgrader export plugins."""
