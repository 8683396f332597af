"""Numeric tabular, content_type np: one FP32 input [-1, 4], a classifier.

Declares both outputs it can give: `predict` (one label per row, [-1, 1]) and `predict_proba`
(one probability per class, [-1, 3]). A request gets `predict` unless it lists outputs.
"""

from pathlib import Path

from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .common import save_request, save_sklearn, tensor

NAME = "model-iris"


def train(out: Path) -> None:
    X, y = load_iris(return_X_y=True)
    # Every tenth row is held out: the sample request sends those.
    held_out = list(range(0, len(X), 10))
    keep = [i for i in range(len(X)) if i % 10 != 0]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X[keep], y[keep])
    save_sklearn(
        out,
        NAME,
        model,
        content_type="np",
        task_type="classification",
        inputs=[tensor("features", "FP32", [-1, 4])],
        outputs=[tensor("predict", "INT64", [-1, 1]), tensor("predict_proba", "FP64", [-1, 3])],
    )
    rows = X[held_out][::3]  # rows 0, 30, 60, 90, 120: all three classes
    save_request(
        out,
        NAME,
        {
            "id": "iris-sample",
            "inputs": [
                {"name": "features", "datatype": "FP32", "shape": list(rows.shape), "data": rows.ravel().tolist()}
            ],
            "outputs": [{"name": "predict"}, {"name": "predict_proba"}],
        },
    )
