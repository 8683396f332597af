"""An image as BYTES with content_type base64: handwritten digits sent as PNG files.

The pipeline starts with a custom step (image_pixels.ImagePixels) that decodes each image with
Pillow, so the client sends the image file itself, base64-encoded, not pixel values.
"""

import base64
import shutil
from io import BytesIO
from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import image_pixels

from .common import save_request, save_sklearn, tensor

NAME = "model-digits"


def to_png(pixels: np.ndarray) -> bytes:
    """An 8x8 digit (values 0-16) as a 32x32 grayscale PNG, as a scanner or a phone would send it."""
    image = Image.fromarray((pixels.reshape(8, 8) * (255 / 16)).astype(np.uint8), mode="L")
    buffer = BytesIO()
    image.resize((32, 32), Image.Resampling.NEAREST).save(buffer, format="PNG")
    return buffer.getvalue()


def train(out: Path) -> None:
    digits = load_digits()
    images = [to_png(row) for row in digits.data]
    model = make_pipeline(image_pixels.ImagePixels(), StandardScaler(), LogisticRegression(max_iter=500)).fit(
        images[10:], digits.target[10:]
    )
    folder = save_sklearn(
        out,
        NAME,
        model,
        content_type="str",
        task_type="classification",
        inputs=[tensor("image", "BYTES", [-1], content_type="base64")],
        outputs=[tensor("predict", "INT64", [-1, 1]), tensor("predict_proba", "FP64", [-1, 10])],
    )
    shutil.copy(Path(image_pixels.__file__), folder / "image_pixels.py")
    samples = images[:4]
    # The held-out digits as image files too, for trying the model with your own `base64` call.
    for i, png in enumerate(samples):
        (out / "requests" / f"digit-{digits.target[i]}.png").parent.mkdir(parents=True, exist_ok=True)
        (out / "requests" / f"digit-{digits.target[i]}.png").write_bytes(png)
    save_request(
        out,
        NAME,
        {
            "inputs": [
                {
                    "name": "image",
                    "datatype": "BYTES",
                    "shape": [len(samples)],
                    "data": [base64.b64encode(png).decode("ascii") for png in samples],
                    "parameters": {"content_type": "base64"},
                }
            ]
        },
    )
