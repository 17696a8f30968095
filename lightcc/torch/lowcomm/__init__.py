"""Training over slow links with rare, compressed outer steps: DiLoCo and Streaming DiLoCo (docs/lowcomm.md)."""
from lightcc.torch.lowcomm.codecs import Dense, EngineTopk, OuterCompression, Quantized
from lightcc.torch.lowcomm.compression_specs import parse_compression
from lightcc.torch.lowcomm.sparse_codec import SparseLowBit
from lightcc.torch.lowcomm.diloco import DiLoCo, default_outer_lr, nesterov_outer, papers_outer

__all__ = ["DiLoCo", "Dense", "EngineTopk", "OuterCompression", "Quantized", "SparseLowBit", "default_outer_lr",
           "nesterov_outer", "papers_outer", "parse_compression"]
