"""seamline's first-party components.

Each is registered through entry points, exactly as a third party's would be.
"""
