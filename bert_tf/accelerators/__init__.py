"""Accelerator arithmetic: the training FLOPs of a BERT step (`flops`, pure Python), the data-sheet peaks of TPU and
GPU devices (`device_peaks`, pure Python) and the peak of the devices a run trains on (`peak_flops`), which the
training log divides by to report model FLOPs utilisation."""
