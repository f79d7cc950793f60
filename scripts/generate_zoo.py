"""Regenerate core/zoo_data/: every torchvision classifier converted to the IR once, shipped as data, so the app and
``core.analyze("resnet50")`` never import torch. ``tests/test_zoo_data.py`` keeps it in sync.

Usage: python scripts/generate_zoo.py [NAME ...]
"""

import gzip
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.bridge.fx_import import from_module  # noqa: E402
from core.bridge.torchvision_zoo import build, entry, names  # noqa: E402

OUT = ROOT / "core" / "zoo_data"


def main(argv: list[str]) -> None:
    warnings.filterwarnings("ignore")
    OUT.mkdir(exist_ok=True)
    index_path = OUT / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for name in argv or names():
        e = entry(name)
        result = from_module(build(name), e.input_shape, name=name)
        data = result.network.to_dict()
        data["description"] = f"torchvision {name} ({e.weights}), imported with torch.fx"
        raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
        (OUT / f"{name}.json.gz").write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
        index[name] = {"family": e.family, "input_shape": list(e.input_shape), "num_params": e.num_params,
                       "gmacs": e.gmacs, "weights": e.weights, "warnings": list(result.warnings)}
        print(f"{name}: {len(data['nodes'])} nodes, {len(raw) / 1e3:.0f} kB json")
    index_path.write_text(json.dumps(dict(sorted(index.items())), indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
