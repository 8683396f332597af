"""Numeric tabular, content_type np: one FP64 input [-1, 10], a regressor.

It also declares an output the model never produces (`interval`): the metadata shows it, the
infer response leaves it out. Declared outputs document the schema; they do not change results.
"""

from pathlib import Path

from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge

from .common import save_request, save_sklearn, tensor

NAME = "model-diabetes"


def train(out: Path) -> None:
    X, y = load_diabetes(return_X_y=True)
    model = Ridge(alpha=0.5).fit(X[20:], y[20:])
    save_sklearn(
        out,
        NAME,
        model,
        content_type="np",
        task_type="regression",
        inputs=[tensor("features", "FP64", [-1, 10])],
        outputs=[tensor("predict", "FP64", [-1, 1]), tensor("interval", "FP64", [-1, 2])],
    )
    rows = X[:3]
    save_request(
        out,
        NAME,
        {
            "inputs": [
                {"name": "features", "datatype": "FP64", "shape": list(rows.shape), "data": rows.tolist()}
            ]
        },
    )
