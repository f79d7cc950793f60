"""build_gpu_timings.py's readers of the frameworks' own performance pages, the Kepler sources (one id per
publisher): TensorFlow's benchmarks page (K80 and DGX-1 P100, from the hand transcriptions in this folder),
MXNet's performance notes (2016 and 2018) and Caffe's K40 page.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from gpu_timings_common import HERE, num, row, show, where

# --------------------------------------------------------------------------- Kepler and P100: TensorFlow
TF_DOC = "tensorflow/docs_src/performance/benchmarks.md"
TF_TRANSCRIBED = HERE / "tensorflow_k80_transcribed.csv"
TF_TRANSCRIBED_P100 = HERE / "tensorflow_p100_transcribed.csv"
TF_NET = {
    "InceptionV3": ("inception_v3", "close: tf_cnn_benchmarks 9165a70 inception3 (Inception v3 at 299x299 "
                    "with batch norm, no auxiliary head)"),
    "ResNet-50": ("resnet50", "close: tf_cnn_benchmarks 9165a70 ResNet v1 (stride 2 on the first 1x1 conv of "
                  "a bottleneck; torchvision has it on the 3x3, v1.5: about 6 % more multiply-adds)"),
    "ResNet-152": ("resnet152", "close: tf_cnn_benchmarks 9165a70 ResNet v1 (stride 2 on the first 1x1 conv "
                   "of a bottleneck; torchvision has it on the 3x3, v1.5)"),
    "VGG16": ("vgg16", "exact"),
}
# the per-model configuration of each platform (the doc's 'Configuration used for each model')
TF_PLATFORM = {
    "Details for Google Compute Engine (NVIDIA® Tesla® K80)": (
        "GCE n1-standard-32-k80x8", {m: "variable_update=parameter_server, local_parameter_device=cpu"
                                     for m in TF_NET}),
    "Details for Amazon EC2 (NVIDIA® Tesla® K80)": (
        "EC2 p2.8xlarge", {"InceptionV3": "variable_update=parameter_server, local_parameter_device=cpu",
                           "ResNet-50": "variable_update=replicated (without NCCL), local_parameter_device=gpu",
                           "ResNet-152": "variable_update=replicated (without NCCL), local_parameter_device=gpu",
                           "VGG16": "variable_update=parameter_server, local_parameter_device=gpu"}),
    # the doc's table names the ResNets 'ResNet50' and 'ResNet152' here
    "Details for NVIDIA® DGX-1™ (NVIDIA® Tesla® P100)": (
        "NVIDIA DGX-1", {"InceptionV3": "variable_update=parameter_server, local_parameter_device=cpu",
                         "ResNet-50": "variable_update=parameter_server, local_parameter_device=cpu",
                         "ResNet-152": "variable_update=parameter_server, local_parameter_device=cpu",
                         "VGG16": "variable_update=replicated (with NCCL), local_parameter_device n/a"}),
}
# per transcription: the device id, the GPU as the note names it, and the doc's environment for that platform
TF_RUNS = (
    (TF_TRANSCRIBED, "k80", "one of its K80 GPUs (one GK210, GPU Boost left on)",
     "TensorFlow (GitHub hash b1e174e, May 2017), tf_cnn_benchmarks 9165a70, CUDA 8.0, cuDNN 5.1"),
    (TF_TRANSCRIBED_P100, "p100-sxm2", "one of its 8 Tesla P100 (SXM2 16 GB, NVLink) GPUs, in its default state",
     "TensorFlow (GitHub hash b1e174e, May 2017, run via Docker), tf_cnn_benchmarks 9165a70, CUDA 8.0, cuDNN 5.1"),
)


def tensorflow_k80(mirror: Path) -> list[dict]:
    """The 1-GPU synthetic-data training rows of TensorFlow's K80 and DGX-1 P100 benchmarks, from the hand
    transcriptions (AlexNet is left out: README.md says why)."""
    sid = "tensorflow-benchmarks-doc"
    out = []
    for path, gpu, gpu_words, fw in TF_RUNS:
        for t in csv.DictReader(path.open(encoding="utf-8")):
            model = t["column"].split(" (")[0]
            net, match = TF_NET[model]
            instance, configs = TF_PLATFORM[t["section"]]
            batch, ips = int(t["batch"]), float(t["images_per_s"])
            out.append(row(
                network=net, torchvision_match=match, gpu=gpu, batch=batch, precision="fp32",
                **{"pass": "training_step"}, framework=fw,
                measured_ms=round(batch / ips * 1000, 3), original_value=ips, original_unit="images/s",
                source_id=sid,
                source=where(sid, TF_DOC, f"## {t['section']} / {t['table']}: row GPUs={t['gpus']}, "
                                          f"column '{t['column']}'") + f"; transcribed in {path.name}",
                note=(f"{instance}, {gpu_words}; synthetic data (a tf.Variable "
                      f"input); {configs[model]}; training step with SGD; mean of 100 steps after 10 warm-up, "
                      "averaged over 5 runs; ms = batch / images/s x 1000"),
            ))
    return out


# --------------------------------------------------------------------------- Kepler: MXNet
# (commit, path, framework, date): the 2016 how_to page and the 2018 faq page of MXNet's performance notes
MXNET_DOCS = (
    ("1ae2be51c12fe854de84b2cfd29cda7eff546986", "docs/how_to/perf.md",
     "MXNet commit 0a03417 (Dec 2016), cuDNN 5.1", "0a03417"),
    ("db4de44f170df08a1500feabccb55a63266d7ae2", "docs/faq/perf.md",
     "MXNet 1.2.0.rc1, cuDNN 7.0.5", "db4de44"),
)
MX_V2 = ("close: MXNet symbols resnet.py = pre-activation ResNet v2 (Identity Mappings), stride 2 on the 3x3 "
         "conv like torchvision v1.5; batch-norm and ReLU placed before each conv")
MX_NET = {
    "VGG 16": ("vgg16", "exact"),      # symbols/vgg.py num_layers=16, no batch norm
    "VGG": ("vgg11", "exact"),         # symbol/vgg.py at 0a03417: configuration A (8 convs 64-512, 3 FC)
    "Inception-v3": ("inception_v3", "close: MXNet symbol inception-v3 at 299x299 (no auxiliary head)"),
    "Resnet 50": ("resnet50", MX_V2),
    "Resnet 152": ("resnet152", MX_V2),
}
# left out: Alexnet (MXNet's symbol has ungrouped 96-256-384-384-256 convs, about 1.4x torchvision's
# multiply-adds: not built in), Alexnet(*16)/(*8) training, Inception-BN (not built in)

# the pages' per-GPU tables, by the '- ' bullet above each: (device id, what the note says the GPU is). The 2016
# page says "K80 (EC2 p2.2xlarge), M40, and P100 (DGX-1)", the 2018 page "K80 (EC2 p2.2xlarge), M60 (EC2
# g3.4xlarge), and V100 (EC2 p3.2xlarge)"
MX_GPU = {
    "K80 (single GPU)": ("k80", "the doc's 'K80 (single GPU)' (EC2 p2): one GK210 of a K80 board"),
    "M40": ("m40", "the doc's 'M40': a Tesla M40 (which board, 12 or 24 GB, is not stated; both have the same "
                   "compute and bandwidth)"),
    "P100": ("p100-sxm2", "the doc's 'P100' (DGX-1): a Tesla P100 SXM2 16 GB"),
    "M60": ("m60", "the doc's 'M60' (EC2 g3.4xlarge): one GM204 GPU (8 GB) of a Tesla M60 board"),
    "V100": ("v100-sxm2", "the doc's 'V100' (EC2 p3.2xlarge): one Tesla V100 SXM2 16 GB"),
}
MX_FP16_TABLE = "Below is the performance result on V100 using float 16."


def _bullet_tables(text: str):
    """Yield (## heading, ### heading, last '- ' bullet, last line of text after it, header, rows) for each table,
    indented or not."""
    h2 = h3 = bullet = para = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if lines[i].startswith("## "):
            h2, h3, bullet, para = lines[i][3:].strip(), "", "", ""
        elif lines[i].startswith("### "):
            h3, bullet, para = lines[i][4:].strip(), "", ""
        elif line.startswith("- "):
            bullet, para = line[2:].strip(), ""
        elif line and not line.startswith("|"):
            para = line
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|?\s*$", lines[i + 1].strip()):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                rows.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
                j += 1
            yield h2, h3, bullet, para, header, rows
            para = ""
            i = j
            continue
        i += 1


def _mx_resnet50_depth(short: str, gpu: str) -> str:
    """Why a training 'Resnet 50' column is taken at its label, for the page (short commit) and GPU."""
    if short != "db4de44":
        text = ("; depth as the table says: the script of that week passed no --num-layers "
                "(train_imagenet.py default 50)")
        if gpu == "p100-sxm2":
            text += ("; 181.5 images/s at batch 32 is near TensorFlow's DGX-1 P100 ResNet-50 (195 at batch 32), "
                     "not its ResNet-152 (82.7)")
        return text
    if gpu == "k80":
        return ("; depth as the table says (50): the 2016 script passed no --num-layers "
                "(train_imagenet.py default 50); the later script passes --num-layers 152, "
                "but 49.5 images/s at batch 32 matches TensorFlow's ResNet-50 on the K80 "
                "(49.0-49.5), not its ResNet-152 (19.7-20.0)")
    text = ("; depth as the table says (50): the later run_vary_batch.sh passes --num-layers 152, but the K80 "
            "table of the same page (49.5 images/s at batch 32) matches TensorFlow's ResNet-50 on the K80 "
            "(49.0-49.5), not its ResNet-152 (19.7-20.0)")
    if gpu == "v100-sxm2":
        text += ("; here 343-364 images/s at batch 64-128 is the fp32 ResNet-50 rate of a V100 SXM2 "
                 "(nvidia-deeplearningexamples: 356-367 images/s at batch 112), not ResNet-152's")
    return text


def mxnet_perf(mirror: Path) -> list[dict]:
    sid = "apache-mxnet-perf"
    out = []
    for commit, path, fw, short in MXNET_DOCS:
        text = show(mirror, sid, path, commit)
        for h2, h3, bullet, para, header, rows in _bullet_tables(text):
            if h2 != "Nvidia GPU" or bullet not in MX_GPU:
                continue
            gpu, gpu_words = MX_GPU[bullet]
            pas = {"Scoring results": "inference", "Training results": "training_step"}[h3]
            fp16 = para == MX_FP16_TABLE
            assert not para or fp16, (path, bullet, para)      # no other table sits under text of its own
            table = f"{bullet} / table after '{para}'" if fp16 else bullet
            for cells in rows:
                batch = int(num(cells[0]))
                for col in range(1, len(header)):
                    if header[col] not in MX_NET or cells[col] == "OOM":
                        continue
                    net, match = MX_NET[header[col]]
                    ips = num(cells[col])
                    if pas == "inference":
                        note = (f"example/image-classification/benchmark_score.py at {short}: Module bound "
                                "for_training=False, forward(is_train=False) on random input already on the GPU, "
                                "5 warm-up + 10 timed batches (time.time, waits for the outputs)")
                        if batch > 32:
                            note += ("; the script at this commit runs batch 1-32 only: how the 64-256 rows "
                                     "were run is not stated")
                        if fp16:
                            note += ("; float16: the script at this commit has no dtype switch, so how it was run "
                                     "is not stated; the symbols' dtype='float16' casts the input to fp16, runs "
                                     "every layer in fp16 and casts the output back to fp32: whole model in half, "
                                     "not AMP (python/mxnet/contrib at this commit has no amp); tensor cores are "
                                     "allowed by default (MXNET_CUDA_ALLOW_TENSOR_CORE, src/common/cuda_utils.h)")
                    else:
                        note = ("train_imagenet.py --benchmark 1 (synthetic data) --gpus 0 via mli/mxnet-benchmark "
                                "run_vary_batch.sh; Speedometer throughput of full steps (forward, backward, SGD "
                                "update)")
                        if batch > 32:
                            note += ("; run_vary_batch.sh runs batch 1-32 only: how the 64 and 128 rows were run "
                                     "is not stated")
                        if net == "resnet50":
                            note += _mx_resnet50_depth(short, gpu)
                    if header[col] == "VGG":
                        note += ("; the column 'VGG' is symbol/vgg.py at 0a03417, VGG configuration A "
                                 "(8 convs 64-512, 3 FC layers): torchvision vgg11")
                    note += f"; {gpu_words}; ms = batch / images/s x 1000"
                    out.append(row(
                        network=net, torchvision_match=match, gpu=gpu, batch=batch,
                        precision="fp16" if fp16 else "fp32",
                        **{"pass": pas}, framework=fw,
                        measured_ms=round(batch / ips * 1000, 3), original_value=ips, original_unit="images/s",
                        source_id=sid,
                        source=where(sid, path, f"## {h2} / ### {h3} / {table}: row Batch={cells[0]}, "
                                                f"column '{header[col]}'", commit),
                        note=note,
                    ))
    return out


# --------------------------------------------------------------------------- Kepler: Caffe
CAFFE_DOC = "docs/performance_hardware.md"
CAFFE_PROTO = "models/bvlc_reference_caffenet/train_val.prototxt"
# only the K40 settings that match device_specs.json's k40 (875 MHz boost, ECC off: the datasheet bandwidth);
# the ECC-on and default-clock (745 MHz) lines, and the Titan, K20 and GTX 770 sections, are left out
CAFFE_SETTINGS = {
    "Best settings with ECC off and maximum clock speed in standard Caffe:":
        "Caffe (2014; convolution as im2col + cuBLAS)",
    "Best settings with Caffe + [cuDNN acceleration](http://nvidia.com/cudnn):":
        "Caffe + cuDNN (version not stated)",
}


def caffe_k40(mirror: Path) -> list[dict]:
    sid = "bvlc-caffe-performance"
    text = show(mirror, sid, CAFFE_DOC)
    proto = show(mirror, sid, CAFFE_PROTO)
    # the TEST data layer's batch: the second 'batch_size' of the prototxt (TRAIN first, then TEST)
    train_batch, test_batch = (int(b) for b in re.findall(r"batch_size:\s*(\d+)", proto)[:2])
    m = re.search(r"each time point is (\d+) iterations/minibatches of (\d+) images", text)
    iters, batch = int(m.group(1)), int(m.group(2))
    assert batch == train_batch, (batch, train_batch)
    section = text.split("## NVIDIA K40", 1)[1].split("\n## ", 1)[0]
    match = ("close: CaffeNet (BVLC reference model: AlexNet with pooling before LRN, 96-256-384-384-256 convs, "
             "conv2/4/5 in 2 groups, 227x227 crop): 724.4 M multiply-adds, 1.3 % above torchvision alexnet's")
    out = []
    for label, fw in CAFFE_SETTINGS.items():
        block = section.split(label, 1)[1].split("\n\n", 2)[1]
        tr = re.search(r"Training is ([\d.]+) secs / (\d+) iterations", block)
        te = re.search(r"Testing is ([\d.]+) secs / validation set \(([\d,]+) images\)", block)
        assert int(tr.group(2)) == iters
        setting = label.rstrip(":")
        secs = float(tr.group(1))
        out.append(row(
            network="alexnet", torchvision_match=match, gpu="k40", batch=batch, precision="fp32",
            **{"pass": "training_step"}, framework=fw,
            measured_ms=round(secs / iters * 1000, 3), original_value=secs,
            original_unit=f"s per {iters} iterations", source_id=sid,
            source=where(sid, CAFFE_DOC, f"## NVIDIA K40 / '{setting}': 'Training is {tr.group(1)} secs / "
                                         f"{iters} iterations'") + f"; batch {batch} from the doc's first paragraph",
            note=(f"wall clock of {iters} training iterations of batch {batch} (forward, backward, SGD with "
                  "momentum, LMDB data prefetch in a thread); ECC off, 875 MHz; ms = s / iterations x 1000"),
        ))
        secs, images = float(te.group(1)), int(te.group(2).replace(",", ""))
        out.append(row(
            network="alexnet", torchvision_match=match, gpu="k40", batch=test_batch, precision="fp32",
            **{"pass": "inference"}, framework=fw,
            measured_ms=round(secs / (images / test_batch) * 1000, 3), original_value=secs,
            original_unit=f"s per {images} images", source_id=sid,
            source=where(sid, CAFFE_DOC, f"## NVIDIA K40 / '{setting}': 'Testing is {te.group(1)} secs / "
                                         f"validation set'")
                   + f"; batch {test_batch}: TEST batch_size of {CAFFE_PROTO}",
            note=(f"wall clock of classifying {images} validation images in batches of {test_batch} (TEST phase "
                  "forward with the accuracy layers and LMDB data loading); ECC off, 875 MHz; "
                  f"ms = s / ({images} / {test_batch}) x 1000"),
        ))
    return out
