"""jinja2 templates of the C backend (installed as tracegrad.codegen_templates)."""
