"""What every case does after training: save the model and its settings file, and a sample request."""

import json
from pathlib import Path
from typing import Any

import joblib

SKLEARN_IMPLEMENTATION = "mlserver_sklearn.SKLearnModel"


def tensor(name: str, datatype: str, shape: list[int], content_type: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "datatype": datatype, "shape": shape}
    if content_type is not None:
        spec["parameters"] = {"content_type": content_type}
    return spec


def save_sklearn(
    out: Path,
    name: str,
    model: Any,
    *,
    content_type: str,
    task_type: str,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    feature_names: list[str] | None = None,
) -> Path:
    """Writes <out>/<name>/model.joblib and model-settings.json, the folder a data scientist uploads."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, folder / "model.joblib")
    parameters: dict[str, Any] = {"uri": "./model.joblib", "content_type": content_type, "task_type": task_type}
    if feature_names is not None:
        parameters["feature_names"] = feature_names
    settings = {
        "name": name,
        "implementation": SKLEARN_IMPLEMENTATION,
        "parameters": parameters,
        "inputs": inputs,
        "outputs": outputs,
    }
    (folder / "model-settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    return folder


def save_request(out: Path, name: str, request: dict[str, Any]) -> None:
    """A ready V2 request for held-out rows: the demo sends it and the tests compare its answers."""
    folder = out / "requests"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(request) + "\n")
