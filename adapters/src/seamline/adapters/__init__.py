"""seamline's edges: the command line, telemetry and logging set-up, exporters."""
