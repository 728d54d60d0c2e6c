"""Writes the reference files of tests/data: float32 safetensors, as HF's files are laid out."""
import json
import struct


def save(path, tensors, meta):
    header, off, blobs = {"__metadata__": meta}, 0, []
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().float()
        b = t.numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode() + b"".join(blobs))
