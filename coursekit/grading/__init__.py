"""nbgrader glue: test helpers for notebooks, preprocessors, submission checks, CLI."""
