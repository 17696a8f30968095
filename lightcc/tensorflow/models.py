"""Keras models built in code (no downloads) for the TensorFlow synthetic benchmark."""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

from lightcc.tensorflow.keras._flavour import keras_module

IMAGE_SHAPE = (224, 224, 3)
CLASSES = 1000
MLP_FEATURES = 1024


def _applications(name: str) -> Callable[..., Any]:
    def build(keras: Any) -> Any:
        # weights=None builds the architecture with random weights: nothing is downloaded.
        return getattr(keras.applications, name)(weights=None, input_shape=IMAGE_SHAPE, classes=CLASSES)

    return build


def mlp25m(keras: Any) -> Any:
    """The torch front's mlp25m layer for layer (lightcc.models): 1024 -> 4096 -> 4096 -> 1000,
    25.1 M parameters in three large GEMMs, so the two fronts' shares of their bounds compare
    the same arithmetic and the same gradients."""
    return keras.Sequential([
        keras.Input((MLP_FEATURES,)),
        keras.layers.Dense(4096, activation="relu"),
        keras.layers.Dense(4096, activation="relu"),
        keras.layers.Dense(CLASSES, activation="softmax"),
    ], name="mlp25m")


def transformer_xl(keras: Any, seq_len: int = 128, vocab: int = 32000, layers: int = 16, d_model: int = 410,
                   heads: int = 10, d_inner: int = 2100) -> Any:
    """A decoder-only transformer with Transformer-XL base's body (16 layers, d_model 410,
    10 heads, d_inner 2100) and a 32k vocabulary; causal self-attention, no recurrence memory.

    ~38.6 M body parameters + 2 x 13.1 M for the input embedding and output projection.
    """
    tokens = keras.Input((seq_len,), dtype="int32")
    x = keras.layers.Embedding(vocab, d_model)(tokens)
    x = _position_layer(keras)()(x)
    for _ in range(layers):
        h = keras.layers.LayerNormalization(epsilon=1e-5)(x)
        h = keras.layers.MultiHeadAttention(heads, d_model // heads)(h, h, use_causal_mask=True)
        x = x + h
        h = keras.layers.LayerNormalization(epsilon=1e-5)(x)
        h = keras.layers.Dense(d_inner, activation="relu")(h)
        x = x + keras.layers.Dense(d_model)(h)
    x = keras.layers.LayerNormalization(epsilon=1e-5)(x)
    logits = keras.layers.Dense(vocab)(x)
    return keras.Model(tokens, logits, name="transformer_xl")


def _position_layer(keras: Any) -> type:
    class AddPositions(keras.layers.Layer):
        """Adds a learned embedding per position."""

        def build(self, input_shape: Any) -> None:
            self.positions = self.add_weight(shape=(input_shape[1], input_shape[2]), initializer="random_normal",
                                             name="positions")

        def call(self, x: Any) -> Any:
            return x + self.positions

    return AddPositions


_BUILDERS: Dict[str, Callable[[Any], Any]] = {
    "resnet50": _applications("ResNet50"),
    "resnet101": _applications("ResNet101"),
    "vgg16": _applications("VGG16"),
    "inceptionv3": _applications("InceptionV3"),
    "transformerxl": transformer_xl,
    "mlp25m": mlp25m,
}


def model_names() -> Tuple[str, ...]:
    return tuple(_BUILDERS)


def build_model(name: str, keras: Any = None) -> Any:
    """Build the named model (case and '-'/'_' insensitive: ResNet50, inception-v3, transformer-xl,
    mlp25m, ...) with the Keras that tf.keras resolves to, unless `keras` is given. Other
    keras.applications names are built the same way (weights=None)."""
    keras = keras or keras_module()
    key = name.lower().replace("-", "").replace("_", "")
    if key in _BUILDERS:
        return _BUILDERS[key](keras)
    if hasattr(keras.applications, name):
        return _applications(name)(keras)
    raise ValueError(f"unknown model {name!r}; choose one of {', '.join(model_names())} or a "
                     f"keras.applications name")


def input_kind(model: Any) -> str:
    """What the model takes: "tokens" (int ids, the transformer), "vector" (mlp25m) or "image"."""
    spec = model.inputs[0]
    if len(spec.shape) == 2:
        return "tokens" if "int" in str(spec.dtype) else "vector"
    return "image"


def is_sequence_model(model: Any) -> bool:
    """Whether the model takes token ids (the transformer) rather than images or vectors."""
    return input_kind(model) == "tokens"
