"""Static lint of a training script and its local imports (AST only; torch is never imported)."""
