"""pgrun: a durable job queue and workflow engine that lives inside PostgreSQL."""

__version__ = "0.1.0"
