#!/usr/bin/env python3
"""The yardstick of `chessrl bench train`: the network of libs/nn
(torch_network.cpp) built in PyTorch from Python and trained with the same
batch size, losses and optimizer as libs/train, on pre-made random tensors (no
data pipeline). Prints one JSON line: parameters, median step seconds and
samples/s.

  python3 tools/chessrl/train_yardstick.py --net 6x64 --batch 256 --threads 1
  python3 tools/chessrl/train_yardstick.py --device cuda --mixed-precision

On CUDA the batches live on the GPU, and --mixed-precision runs the forward
pass under bf16 autocast with TF32 matrix products, as the trainer does.

Debian: apt install python3-torch (the same LibTorch, 1.13, as libtorch-dev).
"""
import argparse
import contextlib
import json
import re
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

INPUT_PLANES = 112  # nn/encoding.h kInputPlanes
POLICY_PLANES = 73  # nn/policy_map.h kPolicyPlanes
POLICY_SIZE = POLICY_PLANES * 64


class ConvBlock(nn.Module):
    """A convolution (no bias), batch norm, ReLU."""

    def __init__(self, in_channels, out_channels, kernel=3):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel, padding=kernel // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with batch norm, optional squeeze-excitation (a
    scale and a bias per channel), the skip connection, ReLU."""

    def __init__(self, filters, se_channels=0):
        super().__init__()
        self.filters = filters
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters)
        self.se_channels = se_channels
        if se_channels > 0:
            self.se_fc1 = nn.Linear(filters, se_channels)
            self.se_fc2 = nn.Linear(se_channels, 2 * filters)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.se_channels > 0:
            s = self.se_fc2(F.relu(self.se_fc1(y.mean((2, 3)))))
            scale, bias = s.chunk(2, 1)
            n = y.size(0)
            y = torch.sigmoid(scale).view(n, self.filters, 1, 1) * y + bias.view(n, self.filters, 1, 1)
        return F.relu(x + y)


class PolicyHead(nn.Module):
    """A 3x3 conv block, a 1x1 convolution (with bias) to the 73 move planes,
    flattened plane-major."""

    def __init__(self, filters):
        super().__init__()
        self.conv = ConvBlock(filters, filters, 3)
        self.planes = nn.Conv2d(filters, POLICY_PLANES, 1)

    def forward(self, x):
        return self.planes(self.conv(x)).flatten(1)


class ValueHead(nn.Module):
    """A 1x1 conv block to `channels`, a hidden dense layer, 3 logits (WDL) and
    the material head (one tanh output off the hidden layer)."""

    def __init__(self, filters, channels, hidden):
        super().__init__()
        self.conv = ConvBlock(filters, channels, 1)
        self.fc1 = nn.Linear(channels * 64, hidden)
        self.fc2 = nn.Linear(hidden, 3)
        self.material = nn.Linear(hidden, 1)

    def forward(self, x):
        hidden = F.relu(self.fc1(self.conv(x).flatten(1)))
        return self.fc2(hidden), torch.tanh(self.material(hidden)).squeeze(1)


class Network(nn.Module):
    def __init__(self, blocks, filters, se_ratio=0, value_channels=32, value_hidden=128):
        super().__init__()
        self.input = ConvBlock(INPUT_PLANES, filters, 3)
        se_channels = filters // se_ratio if se_ratio > 0 else 0
        self.tower = nn.ModuleList(ResidualBlock(filters, se_channels) for _ in range(blocks))
        self.policy = PolicyHead(filters)
        self.value = ValueHead(filters, value_channels, value_hidden)

    def forward(self, x):
        h = self.input(x)
        for block in self.tower:
            h = block(h)
        wdl, material = self.value(h)
        return self.policy(h), wdl, material


def parse_net(text):
    """"BxF" or "BxF-seR", as nn::NetworkConfig::name() writes it."""
    m = re.fullmatch(r"(\d+)x(\d+)(?:-se(\d+))?", text)
    if not m:
        sys.exit(f"train_yardstick: bad --net {text!r} (want BxF or BxF-seR)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def random_batch(batch, generator):
    """Random 0/1 input planes, a soft policy target over ~30 random moves
    (summing to 1), a random WDL class."""
    x = torch.randint(0, 2, (batch, INPUT_PLANES, 8, 8), generator=generator).float()
    index = torch.randint(0, POLICY_SIZE, (batch, 30), generator=generator)
    weight = torch.rand((batch, 30), generator=generator) + 0.05
    policy = torch.zeros(batch, POLICY_SIZE).scatter_add_(1, index, weight)
    policy /= policy.sum(1, keepdim=True)
    wdl = torch.randint(0, 3, (batch,), generator=generator)
    material = torch.rand((batch,), generator=generator) * 2 - 1
    legal = torch.ones(batch, POLICY_SIZE, dtype=torch.bool)
    return x, policy, wdl, material, legal


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", default="6x64")
    ap.add_argument("--value-channels", type=int, default=32)
    ap.add_argument("--value-hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--mixed-precision", action="store_true",
                    help="CUDA: bf16 autocast for the forward pass, TF32 (as libs/train)")
    ap.add_argument("--expect-params", type=int, default=0,
                    help="fail unless the network has this many parameters (the C++ count)")
    args = ap.parse_args()

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train_yardstick: --device cuda, but this PyTorch sees no CUDA GPU")
    if args.mixed_precision and args.device != "cuda":
        sys.exit("train_yardstick: --mixed-precision needs --device cuda")
    if args.mixed_precision:
        # As libs/train: TF32 matrix products ("high"); cuDNN's convolutions use TF32 by
        # default (the allow_tf32 flags are deprecated in PyTorch 2.9 and later).
        torch.set_float32_matmul_precision("high")
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(1)
    blocks, filters, se_ratio = parse_net(args.net)
    net = Network(blocks, filters, se_ratio, args.value_channels, args.value_hidden)
    parameters = sum(p.numel() for p in net.parameters())
    if args.expect_params and parameters != args.expect_params:
        sys.exit(f"train_yardstick: the network has {parameters} parameters, the C++ one "
                 f"{args.expect_params}: not the same architecture")
    net.to(device)
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    generator = torch.Generator().manual_seed(2)
    batches = [tuple(t.to(device) for t in random_batch(args.batch, generator)) for _ in range(4)]

    times = []
    for step in range(args.warmup + args.steps):
        x, policy_target, wdl_target, material_target, legal = batches[step % len(batches)]
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        # PyTorch 1.13's autocast checks bf16 support even when disabled, which
        # fails on a CPU-only build: enter it only when asked for.
        precision = (torch.autocast("cuda", dtype=torch.bfloat16) if args.mixed_precision
                     else contextlib.nullcontext())
        with precision:
            policy, wdl, material = net(x)
        policy, wdl, material = policy.float(), wdl.float(), material.float()
        # As the C++ trainer: the policy over the legal moves (a mask), the
        # material head's squared error.
        policy = policy.masked_fill(~legal, -1e9)
        policy_loss = -(policy_target * F.log_softmax(policy, 1)).sum(1).mean()
        value_loss = F.cross_entropy(wdl, wdl_target)
        material_loss = ((material - material_target) ** 2).mean()
        loss = policy_loss + value_loss + material_loss
        loss.backward()
        optimizer.step()
        loss.item()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)

    step_seconds = statistics.median(times)
    print(json.dumps({
        "torch": torch.__version__,
        "net": args.net,
        "threads": torch.get_num_threads(),
        "device": args.device,
        "mixed_precision": args.mixed_precision,
        "parameters": parameters,
        "batch": args.batch,
        "steps": len(times),
        "step_seconds": step_seconds,
        "samples_per_second": args.batch / step_seconds,
        "loss": float(loss),
    }), flush=True)


if __name__ == "__main__":
    main()
