"""An MLflow model with a signature, served with no settings file.

Trained on a DataFrame so the signature records column names, with infer_signature, and the
scaling pipeline saved inside the model so clients send raw measurements. MLServer's MLflow
runtime reads the signature: one input per column, shape [-1, 1].
"""

import shutil
from pathlib import Path

import pandas as pd
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .common import save_request

NAME = "model-wine"


def dataset() -> tuple[pd.DataFrame, pd.Series]:
    wine = load_wine(as_frame=True)
    X = wine.data.rename(columns={"od280/od315_of_diluted_wines": "od280_od315"})
    return X, wine.target


def train(out: Path) -> None:
    import mlflow.sklearn
    from mlflow.models import infer_signature

    X, y = dataset()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X.iloc[5:], y.iloc[5:])
    signature = infer_signature(X.iloc[5:], model.predict(X.iloc[5:]))
    folder = out / NAME
    shutil.rmtree(folder, ignore_errors=True)
    mlflow.sklearn.save_model(model, str(folder), signature=signature)
    rows = X.iloc[:3]
    save_request(
        out,
        NAME,
        {
            "inputs": [
                {"name": c, "datatype": "FP64", "shape": [len(rows), 1], "data": rows[c].tolist()}
                for c in X.columns
            ]
        },
    )
