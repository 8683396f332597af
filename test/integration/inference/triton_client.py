"""Calls a model through the gateway with the official V2 client, as a user would.

    python triton_client.py HOST:PORT MODEL API_KEY

Prints {"metadata": ..., "predict": [...], "predict_proba": [...]} for two iris rows.
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
# MLServer speaks JSON tensors only: the binary tensor extension is off on both sides.
features.set_data_from_numpy(rows, binary_data=False)
outputs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("predict", "predict_proba")]
result = client.infer(model, [features], outputs=outputs, headers=headers, request_id="triton-1")
print(
    json.dumps(
        {
            "ready": client.is_model_ready(model, headers=headers),
            "live": client.is_server_live(),
            "server": client.get_server_metadata(),
            "metadata": metadata,
            "id": result.get_response()["id"],
            "predict": result.as_numpy("predict").ravel().tolist(),
            "predict_proba": result.as_numpy("predict_proba").ravel().tolist(),
        }
    )
)
