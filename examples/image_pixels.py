"""A scikit-learn step that turns encoded images (PNG, JPEG... bytes) into pixel features.

MLServer hands a BYTES input sent with content_type "base64" to the model as a list of decoded
bytes, one per row; this step opens each with Pillow, makes it 8x8 grayscale and scales it to the
0-16 range of scikit-learn's digits dataset.

The model pickle refers to this module by name (`image_pixels`), so the training script copies
this file into the model folder: MLServer puts the folder it serves on the Python path.
"""

from io import BytesIO

import numpy as np
from PIL import Image
from sklearn.base import BaseEstimator, TransformerMixin

SIDE = 8


class ImagePixels(TransformerMixin, BaseEstimator):
    def fit(self, X, y=None):  # noqa: N803 (scikit-learn's naming)
        return self

    def transform(self, X):  # noqa: N803
        rows = [self._pixels(item) for item in np.asarray(X, dtype=object).ravel()]
        return np.stack(rows)

    @staticmethod
    def _pixels(item) -> np.ndarray:
        if isinstance(item, str):
            item = item.encode("latin-1")
        with Image.open(BytesIO(item)) as image:
            gray = image.convert("L").resize((SIDE, SIDE), Image.Resampling.BILINEAR)
        return np.asarray(gray, dtype=np.float64).ravel() / 255.0 * 16.0
