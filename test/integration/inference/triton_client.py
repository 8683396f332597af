"""Calls a model through the gateway with the official V2 client, as a user would.

    python triton_client.py HOST:PORT MODEL API_KEY

Prints, for two iris rows, what tritonclient got with its defaults (binary tensors both ways),
with every output left to its default, and with JSON tensors.
"""

import json
import sys

import numpy as np
import tritonclient.http as httpclient

url, model, key = sys.argv[1:4]
headers = {"Authorization": f"Apikey {key}"}
client = httpclient.InferenceServerClient(url=url)

metadata = client.get_model_metadata(model, headers=headers)
(spec,) = metadata["inputs"]
rows = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]], dtype=np.float32)
features = httpclient.InferInput(spec["name"], list(rows.shape), spec["datatype"])
# tritonclient's defaults: binary tensors in and out (the gateway translates them for MLServer).
features.set_data_from_numpy(rows)
outputs = [httpclient.InferRequestedOutput(n) for n in ("predict", "predict_proba")]
result = client.infer(model, [features], outputs=outputs, headers=dict(headers), request_id="triton-1")
# No outputs named: tritonclient asks for every output in binary.
every = client.infer(model, [features], headers=dict(headers))
# JSON tensors both ways, as before the translation existed.
as_json = httpclient.InferInput(spec["name"], list(rows.shape), spec["datatype"])
as_json.set_data_from_numpy(rows, binary_data=False)
json_outputs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("predict", "predict_proba")]
json_result = client.infer(model, [as_json], outputs=json_outputs, headers=dict(headers))
print(
    json.dumps(
        {
            "ready": client.is_model_ready(model, headers=headers),
            "live": client.is_server_live(),
            "server": client.get_server_metadata(),
            "metadata": metadata,
            "id": result.get_response()["id"],
            "binary_outputs": sorted(
                o["name"] for o in result.get_response()["outputs"] if "binary_data_size" in o.get("parameters", {})
            ),
            "predict": result.as_numpy("predict").ravel().tolist(),
            "predict_proba": result.as_numpy("predict_proba").ravel().tolist(),
            "every_predict": every.as_numpy("predict").ravel().tolist(),
            "json_predict": json_result.as_numpy("predict").ravel().tolist(),
            "json_predict_proba": json_result.as_numpy("predict_proba").ravel().tolist(),
        }
    )
)
