"""Frontend: Python kernel source -> `tile`-dialect module (parse, scope, fold, type)."""
