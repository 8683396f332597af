"""One module per case of the serving spec; each trains a model and writes its folder."""
