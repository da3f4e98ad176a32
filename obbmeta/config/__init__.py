"""obbinfer's configuration, the model stage's settings: one frozen typed object whose fields carry nvinfer's keys,
ranges, defaults and property names (:mod:`obbmeta.config.settings`), and nvinfer's key files read into it
(:mod:`obbmeta.config.nvinfer`). Torch-free, so the elements' properties and a config check need no model."""
