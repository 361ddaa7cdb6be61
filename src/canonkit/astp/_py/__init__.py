"""ASTP pure Python: the twins of the compiled kernels (``hash``, ``proofs``, ``segments``,
``scan``, ``formb``, ``audit``) and the code both backends share (``common``; ``fields``, the §2.1
field encoder)."""
