"""The PyTorch bridge: nn.Module ↔ IR, live timing and calibration.

Every module here imports torch lazily (inside functions), so ``import core`` stays torch-free.
"""
