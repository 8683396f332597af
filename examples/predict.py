"""What scikit-learn answers in-process for a V2 request, to check what the served model answers.

    .venv/bin/python examples/predict.py MODEL_DIR REQUEST_JSON

Loads the model from its folder (joblib, or MLflow when there is an MLmodel file), turns the
request's inputs into what the model was trained on (a numpy array for np, a DataFrame for pd
and MLflow, a list of strings for str, decoded bytes for base64) and prints
{"<output>": [...flat values...]} for each output the request asks for (default: predict).
"""

import base64
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

NUMPY_TYPES = {"FP32": np.float32, "FP64": np.float64, "INT32": np.int32, "INT64": np.int64, "BOOL": np.bool_}


def column(tensor: dict) -> list:
    data = np.asarray(tensor["data"], dtype=object).ravel().tolist()
    if tensor.get("parameters", {}).get("content_type") == "base64":
        return [base64.b64decode(v, validate=True) for v in data]
    return data


def main() -> None:
    folder, request_path = Path(sys.argv[1]), Path(sys.argv[2])
    request = json.loads(request_path.read_text())
    inputs = request["inputs"]
    wanted = [o["name"] for o in request.get("outputs") or [{"name": "predict"}]]

    if (folder / "MLmodel").exists():
        import mlflow.pyfunc

        model = mlflow.pyfunc.load_model(str(folder))
        frame = pd.DataFrame({t["name"]: np.asarray(t["data"], dtype=NUMPY_TYPES[t["datatype"]]).ravel() for t in inputs})
        print(json.dumps({"predict": np.asarray(model.predict(frame)).ravel().tolist()}))
        return

    import joblib

    sys.path.insert(0, str(folder))  # custom pipeline steps ship beside the model, as MLServer sees them
    settings = json.loads((folder / "model-settings.json").read_text())
    model = joblib.load(folder / settings["parameters"]["uri"])
    content_type = settings["parameters"]["content_type"]
    if content_type == "np":
        (tensor,) = inputs
        X = np.asarray(tensor["data"], dtype=NUMPY_TYPES[tensor["datatype"]]).reshape(tensor["shape"])
    elif content_type == "pd":
        X = pd.DataFrame({t["name"]: column(t) for t in inputs})
    else:
        (tensor,) = inputs
        X = column(tensor)
    print(json.dumps({name: np.asarray(getattr(model, name)(X)).ravel().tolist() for name in wanted}))


if __name__ == "__main__":
    main()
