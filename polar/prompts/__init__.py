"""Prompt templates: Jinja2 with StrictUndefined, YAML front matter, versioned by content hash."""
