"""torchvision's classifiers as the calculator ships them: built as their DEFAULT weights build them (aux heads,
image size), on the meta device where possible (no weights allocated), at the weights' crop size.

Used by ``scripts/generate_zoo.py`` (which writes ``core/zoo_data/``) and by the test that keeps that data in sync.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ZooEntry:
    name: str
    family: str
    input_shape: tuple[int, int, int]
    num_params: int          # torchvision's published weights.meta["num_params"]
    gmacs: float             # torchvision's published weights.meta["_ops"] (G multiply-adds, rounded to 3 decimals)
    weights: str             # the DEFAULT weights' name, whose meta these are


# kwargs that make the architecture match the DEFAULT weights (torchvision's builders apply them when weights are
# given; with weights=None they would differ)
ARCH_KWARGS = {
    "googlenet": {"aux_logits": False, "init_weights": False},
    "inception_v3": {"aux_logits": True, "init_weights": False},
}


def names() -> list[str]:
    import torchvision

    return sorted(torchvision.models.list_models(module=torchvision.models))


def family(name: str) -> str:
    for prefix, fam in (("resnext", "ResNeXt"), ("wide_resnet", "Wide ResNet"), ("resnet", "ResNet"),
                        ("vgg", "VGG"), ("alexnet", "AlexNet"), ("densenet", "DenseNet"), ("squeezenet", "SqueezeNet"),
                        ("googlenet", "GoogLeNet"), ("inception", "Inception"), ("mobilenet_v2", "MobileNet v2"),
                        ("mobilenet_v3", "MobileNet v3"), ("mnasnet", "MNASNet"), ("shufflenet", "ShuffleNet v2"),
                        ("efficientnet_v2", "EfficientNet v2"), ("efficientnet", "EfficientNet"), ("regnet", "RegNet"),
                        ("convnext", "ConvNeXt"), ("vit", "Vision Transformer"), ("swin_v2", "Swin v2"),
                        ("swin", "Swin"), ("maxvit", "MaxViT")):
        if name.startswith(prefix):
            return fam
    return "other"


def entry(name: str) -> ZooEntry:
    import torchvision

    w = torchvision.models.get_model_weights(name).DEFAULT
    crop = getattr(w.transforms(), "crop_size", [224])[0]
    return ZooEntry(name, family(name), (3, crop, crop), int(w.meta["num_params"]), float(w.meta["_ops"]), str(w))


def build(name: str, device: str = "meta"):
    """The eval-mode model on ``device``; RegNet cannot be built on meta tensors and falls back to the CPU."""
    import torch
    import torchvision

    kwargs = dict(ARCH_KWARGS.get(name, {}))
    if name.startswith("vit_"):
        kwargs["image_size"] = entry(name).input_shape[1]
    try:
        with torch.device(device):
            return torchvision.models.get_model(name, weights=None, **kwargs).eval()
    except (NotImplementedError, RuntimeError):
        return torchvision.models.get_model(name, weights=None, **kwargs).eval()
