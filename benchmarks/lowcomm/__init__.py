"""Quality of low-communication training (DiLoCo) against DDP on a byte-level language model (README.md)."""
