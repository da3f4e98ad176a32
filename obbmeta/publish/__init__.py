"""Publish, the last stage of the data path: the message format obbmessage sends through nvmsgconv / nvmsgbroker
(its JSON Schema in ``schemas/``) and its reader on the consumer's side (:mod:`obbmeta.publish.messages`). The
DeepStream structs of a message are written by :mod:`obbmeta.nvds.messages`, the one writer of NVIDIA's structs."""
