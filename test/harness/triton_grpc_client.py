"""Calls a model over gRPC with the official client, tritonclient.grpc, as a user would.

    python triton_grpc_client.py HOST:PORT MODEL API_KEY [VERSION]

Prints as JSON what the client got: the server's and the model's health and metadata, two iris
rows inferred (raw tensors, the client's default), the same rows from VERSION when given, and
the status and message of each call the server refused (no key, a key that does not exist, a
model that does not exist, a wrong shape, a wrong datatype).
"""

import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

url, model, key = sys.argv[1:4]
version = sys.argv[4] if len(sys.argv) > 4 else ""
headers = {"authorization": f"Apikey {key}"}
client = grpcclient.InferenceServerClient(url=url)
rows = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]], dtype=np.float32)


def features(spec, data, datatype=None):
    datatype = datatype or spec["datatype"]
    tensor = grpcclient.InferInput(spec["name"], list(data.shape), datatype)
    tensor.set_data_from_numpy(data.astype(triton_to_np_dtype(datatype)))
    return tensor


def refused(call):
    try:
        call()
    except InferenceServerException as e:
        return {"status": e.status(), "message": e.message()}
    return None


metadata = client.get_model_metadata(model, headers=headers, as_json=True)
(spec,) = metadata["inputs"]
outputs = [grpcclient.InferRequestedOutput(n) for n in ("predict", "predict_proba")]
result = client.infer(model, [features(spec, rows)], outputs=outputs, headers=headers, request_id="grpc-1")
every = client.infer(model, [features(spec, rows)], headers=headers)
out = {
    "live": client.is_server_live(),
    "ready": client.is_server_ready(),
    "server": client.get_server_metadata(as_json=True),
    "model_ready": client.is_model_ready(model, headers=headers),
    "metadata": metadata,
    "id": result.get_response().id,
    "model_name": result.get_response().model_name,
    "model_version": result.get_response().model_version,
    "predict": result.as_numpy("predict").ravel().tolist(),
    "predict_proba": result.as_numpy("predict_proba").ravel().tolist(),
    "proba_shape": list(result.as_numpy("predict_proba").shape),
    "every_outputs": sorted(o.name for o in every.get_response().outputs),
    "refused": {
        "no_key": refused(lambda: client.infer(model, [features(spec, rows)])),
        "unknown_key": refused(
            lambda: client.infer(
                model, [features(spec, rows)], headers={"authorization": "Apikey tg_unknown_0000000000000000"}
            )
        ),
        "no_model": refused(lambda: client.infer("model-nowhere", [features(spec, rows)], headers=headers)),
        "shape": refused(
            lambda: client.infer(model, [features(spec, np.ones((2, 3), dtype=np.float32))], headers=headers)
        ),
        "datatype": refused(
            lambda: client.infer(model, [features(spec, np.ones((2, 4), dtype=np.int32), "INT32")], headers=headers)
        ),
        "metadata_no_key": refused(lambda: client.get_model_metadata(model)),
    },
}
if version:
    versioned = client.infer(model, [features(spec, rows)], model_version=version, headers=headers)
    out["versioned"] = {
        "model_version": versioned.get_response().model_version,
        "predict": versioned.as_numpy("predict").ravel().tolist(),
        "ready": client.is_model_ready(model, model_version=version, headers=headers),
    }
    out["refused"]["no_version"] = refused(
        lambda: client.infer(model, [features(spec, rows)], model_version="nine", headers=headers)
    )
print(json.dumps(out))
