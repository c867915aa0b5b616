"""What seamline's own machinery costs a run: ``orchestration`` (the bare jitted model
against a traced pipeline run), ``monitor_cost`` (the ``memory`` monitor) and
``finite_check`` (the call-time NaN check of a compiled step).
"""
