"""ASTP pure Python: the twins of the compiled kernels (``hash``, ``fields``, ``proofs``,
``segments``, ``formb``) and ``common``, the code both backends share."""
