"""The secondary stage: a second model on each object's oriented box cropped upright (the weight of ``obbinfer
process-mode=2``, usable from any probe).

* :mod:`.classify`: a classifier or a text recogniser on the crops, one result per object
  (:class:`SecondaryModel`; results as nvinfer's secondary classifier writes them, ``NvDsClassifierMeta``);
* :mod:`.detect`: an oriented detector on the crops, its boxes mapped back to the frame as children of the object
  (:class:`SecondaryDetector`; as nvinfer's secondary detector, which crops the axis-aligned box instead).
"""
from .classify import OUTPUT_FORMATS, READINGS, TEXT_CLASS_ID, Result, SecondaryModel
from .detect import CropRegion, SecondaryDetector, read_box, regions, to_frame

__all__ = ["SecondaryModel", "Result", "OUTPUT_FORMATS", "READINGS", "TEXT_CLASS_ID", "SecondaryDetector",
           "CropRegion", "read_box", "regions", "to_frame"]
