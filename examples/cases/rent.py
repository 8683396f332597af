"""String and mixed columns, content_type pd: one BYTES [-1] input per column, listed in feature_names.

MLServer builds a DataFrame with one column per input, as strings. The ColumnTransformer one-hot
encodes the text column and scales the numeric ones (scikit-learn converts numeric strings).
"""

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from .common import save_request, save_sklearn, tensor

NAME = "model-rent"
COLUMNS = ["city", "rooms", "area"]
CITY_PRICE = {"Paris": 30.0, "Lyon": 16.0, "Lille": 13.0, "Nantes": 14.0}


def dataset(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    city = rng.choice(list(CITY_PRICE), size=n)
    rooms = rng.integers(1, 6, size=n)
    area = (rooms * 18 + rng.normal(0, 8, size=n)).round(1)
    rent = np.array([CITY_PRICE[c] for c in city]) * area + rooms * 40 + rng.normal(0, 50, size=n)
    # As the client sends them: every column a string.
    X = pd.DataFrame({"city": city, "rooms": rooms.astype(str), "area": area.astype(str)})
    return X, rent


def train(out: Path) -> None:
    X, y = dataset(400, seed=1)
    model = Pipeline(
        [
            (
                "columns",
                ColumnTransformer(
                    [
                        ("city", OneHotEncoder(handle_unknown="ignore"), ["city"]),
                        ("numbers", StandardScaler(), ["rooms", "area"]),
                    ]
                ),
            ),
            ("ridge", Ridge(alpha=1.0)),
        ]
    ).fit(X, y)
    save_sklearn(
        out,
        NAME,
        model,
        content_type="pd",
        task_type="regression",
        feature_names=COLUMNS,
        inputs=[tensor(c, "BYTES", [-1]) for c in COLUMNS],
        outputs=[tensor("predict", "FP64", [-1, 1])],
    )
    rows, _ = dataset(3, seed=2)
    save_request(
        out,
        NAME,
        {
            "inputs": [
                {
                    "name": c,
                    "datatype": "BYTES",
                    "shape": [len(rows)],
                    "data": rows[c].tolist(),
                    "parameters": {"content_type": "str"},
                }
                for c in COLUMNS
            ]
        },
    )
