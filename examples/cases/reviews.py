"""Raw text, content_type str: one BYTES [-1] input, a TfidfVectorizer + LogisticRegression pipeline."""

from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from .common import save_request, save_sklearn, tensor

NAME = "model-reviews"

POSITIVE = [
    "great product, works perfectly",
    "excellent quality and fast delivery",
    "I love it, highly recommended",
    "very good value for the money",
    "works great, very happy with it",
    "fantastic, exactly what I needed",
    "superb build quality, love the design",
    "happy with the purchase, good service",
    "brilliant and easy to use",
    "good quality, recommended to friends",
    "perfect fit and great finish",
    "excellent, would buy again",
]
NEGATIVE = [
    "terrible, broke after one day",
    "awful quality, waste of money",
    "very disappointed, does not work",
    "bad product and slow delivery",
    "poor build, stopped working quickly",
    "horrible experience, never again",
    "cheap and broken on arrival",
    "do not buy, complete waste",
    "worst purchase I have made",
    "bad quality, returned it",
    "disappointing and poorly made",
    "useless, it does not work at all",
]


def train(out: Path) -> None:
    texts = POSITIVE + NEGATIVE
    labels = ["positive"] * len(POSITIVE) + ["negative"] * len(NEGATIVE)
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression(C=10)).fit(texts, labels)
    save_sklearn(
        out,
        NAME,
        model,
        content_type="str",
        task_type="classification",
        inputs=[tensor("text", "BYTES", [-1])],
        outputs=[tensor("predict", "BYTES", [-1, 1]), tensor("predict_proba", "FP64", [-1, 2])],
    )
    samples = ["really great quality, love it", "broke quickly, waste of money", "does not work"]
    save_request(
        out,
        NAME,
        {
            "inputs": [
                {
                    "name": "text",
                    "datatype": "BYTES",
                    "shape": [len(samples)],
                    "data": samples,
                    "parameters": {"content_type": "str"},
                }
            ]
        },
    )
