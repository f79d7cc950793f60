"""Links that reopen a view: the sidebar's state in the URL's query parameters, both ways.

Pure functions (no Streamlit): ``link`` turns the sidebar's state into the parameters to write and the link to copy,
``decode`` turns parameters from a URL into state values plus one notice per parameter it could not use,
``pack_network``/``unpack_network`` carry an edited network. ``ui.state`` applies a decoded link on a session's first
run and writes the parameters back after every run; the page itself is the URL's path (``app.py``'s ``url_path``).

Keys are short and only non-default values travel: ``/Estimates?model=resnet50&batch=64&dtype=fp16&device=a100``.
An edited network travels as ``model=custom&net=<zlib + base64url of its compact IR JSON>`` while the whole link
stays within ``URL_LIMIT``; otherwise the link says ``model=custom`` alone and the page asks for the IR JSON export.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode, urlsplit

import core
from core.api import TIMM_PREFIX, parse_shape
from core.choices import LAUNCHES, VARIANTS
from core.precision import OPTIMIZERS, PRECISIONS

# the sidebar's session-state key → the URL's key, in the order a link lists them (state keys as in ui/state.py)
PARAMS = {"model": "model", "input_shape": "input", "batch_size": "batch", "dtype": "dtype",
          "optimizer": "optimizer", "device": "device", "ppp": "ppp", "variant": "time", "launch": "launch"}
NET = "net"                          # the URL's key for an edited network (with model=custom)
CUSTOM = "custom"                    # ui.state.CUSTOM: the MODEL value of the edited network
KEYS = (*PARAMS.values(), NET)       # every URL key this module owns; others (``lab``, ``embed``) are left alone

# 8,000 characters for the whole link: RFC 9110 §4.1 asks every sender and recipient to support URIs of at least
# 8,000 octets, and the proxies a class server sits behind stop near there by default (nginx answers 414 when the
# request line passes its 8 KB header buffer; Apache's LimitRequestLine is 8,190). Chrome and Firefox take far more.
# A compressed IR JSON of ResNet-50 is ~2,300 characters and DenseNet-121's ~5,100, so most edits travel.
URL_LIMIT = 8000
NET_JSON_LIMIT = 2 * 2 ** 20         # an unpacked network is capped like an IR JSON upload (2 MB): no zlib bomb
BATCH_MIN, BATCH_MAX = 1, 4096       # the sidebar's number box
PPP_STEPS = 20                       # the PPP slider: 0.05 … 1.0 in steps of 0.05
EXPORT_HINT = "export its IR JSON on the Network page and send the file with the link"


_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_{}[]()<>#+-.!|~$:"})


def plain(text: str) -> str:
    """``text`` escaped for Streamlit's Markdown: a link's values are the sender's text, and ``[Log in](…)`` or an
    image in a notice must read as the characters it is, not as a link in an official-looking box."""
    return str(text).translate(_MARKDOWN)


def _fmt_ppp(value: float) -> str:
    return f"{round(float(value), 2):g}"


_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


def pack_network(network: core.Network) -> str:
    """The network as URL-safe text: compact IR JSON, zlib level 9, base64url without padding."""
    text = json.dumps(network.to_dict(), separators=(",", ":"))
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def unpack_network(blob: str) -> core.Network:
    """``pack_network``'s inverse, checked like an imported IR JSON (``compile_network``). Any damage is a
    ``NetworkError`` naming ``net``; at most ``NET_JSON_LIMIT`` bytes are ever inflated."""
    def bad(why: str) -> core.NetworkError:
        return core.NetworkError(why, field=NET, value=blob[:40] + ("…" if len(blob) > 40 else ""))

    if not _BASE64URL.fullmatch(blob):     # the decoder would drop characters outside the alphabet and read on
        raise bad("not base64url text")
    try:
        packed = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
    except (binascii.Error, ValueError):
        raise bad("not base64url text") from None
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(packed, NET_JSON_LIMIT + 1)
    except zlib.error:
        raise bad("not zlib-compressed data (the link was cut or altered)") from None
    if len(data) > NET_JSON_LIMIT or inflate.unconsumed_tail:
        raise bad(f"the network is over the {NET_JSON_LIMIT // 2 ** 20} MB limit of an IR JSON")
    if not inflate.eof:
        raise bad("the compressed network is cut short (the link was truncated)")
    try:
        network = core.Network.from_json(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise bad("not UTF-8 text") from None
    except core.CalcError as e:
        raise bad(str(e)) from None
    try:
        core.compile_network(network)
    except core.CalcError as e:
        raise bad(f"not a valid network: {e}") from None
    return network


@dataclass(frozen=True)
class Link:
    params: dict[str, str]           # the owned URL keys with a non-default value, in ``PARAMS`` order
    url: str                         # the link to copy: base URL, the other parameters kept, these
    network_chars: int | None = None  # a custom network too large to travel: its packed size (else None)


def link(state: Mapping, defaults: Mapping, *, base_url: str = "", packed: str | None = None,
         others: Mapping[str, str] | None = None) -> Link:
    """The URL parameters for ``state`` (only values that differ from ``defaults``) and the link to copy.

    ``packed``: the custom network's ``pack_network`` text when ``state`` selects it; it travels as ``net`` if the
    whole link stays within ``URL_LIMIT``, else it is left out and ``network_chars`` says how large it was.
    ``others``: URL parameters this module does not own (``lab=3``), kept in the link."""
    params: dict[str, str] = {}
    for key, url_key in PARAMS.items():
        value = state.get(key, defaults[key])
        if key == "ppp":
            same, text = math.isclose(float(value), float(defaults[key])), _fmt_ppp(value)
        elif key == "input_shape":
            text = str(value).strip()
            try:
                text = "x".join(map(str, parse_shape(text))) if text else ""
            except core.CalcError:
                pass                        # travels as typed; the link's reader says why it is not used
            same = text == str(defaults[key]).strip()
        else:
            text = str(value)
            same = value == defaults[key]
        if not same:
            params[url_key] = text

    base = base_url + "/" if base_url and not urlsplit(base_url).path else base_url    # http://host → http://host/

    def url(p: Mapping[str, str]) -> str:
        query = urlencode({**(others or {}), **p}, safe=":", quote_via=quote)
        return f"{base}?{query}" if query else (base or "?")

    too_large = None
    if params.get("model") == CUSTOM and packed is not None:
        with_net = {**params, NET: packed}
        if len(url(with_net)) <= URL_LIMIT:
            params = with_net
        else:
            too_large = len(packed)
    return Link(params, url(params), too_large)


@dataclass
class Opened:
    """What a link asks for, checked: ``values`` by session-state key (only parameters present and valid),
    ``network`` the edited network carried by ``net``, ``notices`` one line per parameter that was not used."""
    values: dict = field(default_factory=dict)
    network: core.Network | None = None
    notices: list[str] = field(default_factory=list)


def _choice(allowed: Collection[str], why: str | None = None) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text not in allowed:
            raise ValueError(why or f"not one of {', '.join(sorted(allowed))}")
        return text
    return check


def _batch(text: str) -> int:
    if not text.isdigit() or not BATCH_MIN <= int(text) <= BATCH_MAX:
        raise ValueError(f"a whole number from {BATCH_MIN} to {BATCH_MAX:,} expected")
    return int(text)


def _ppp(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    steps = value * PPP_STEPS
    if not math.isfinite(steps) or not (1 <= round(steps) <= PPP_STEPS and math.isclose(steps, round(steps),
                                                                                      abs_tol=1e-6)):
        raise ValueError(f"a multiple of {1 / PPP_STEPS:g} from {1 / PPP_STEPS:g} to 1 expected")
    return round(steps) / PPP_STEPS


def decode(params: Mapping[str, str], defaults: Mapping, *, models: Callable[[str], bool], devices: Collection[str],
           check_input: Callable[[object, str], None] | None = None) -> Opened:
    """Check a URL's parameters against what the sidebar accepts; a bad one is left out with a notice naming it.

    ``models(name)``: whether the sidebar's network picker takes ``name`` (built-ins; ``timm:…`` names where timm is
    there). ``devices``: the device ids of this session. ``check_input(model, shape)``: raises ``CalcError`` when the
    network (a name, or the custom ``Network``) cannot take that input shape; by default ``core.analyze`` decides,
    which also loads a ``timm:`` model and so tells whether it exists. Keys this module does not own are ignored."""
    check_input = check_input or (lambda model, shape: core.analyze(model, input_shape=shape or None))
    out = Opened()

    def notice(key: str, text: str, why: str, fallback: object) -> None:
        shown = text if len(text) <= 60 else text[:57] + "…"
        out.notices.append(f"Link parameter {key}={shown} not used ({why}): using {fallback}.")

    no_device = "no device with this id here; a device of your own travels as a devices JSON export"
    checks = {"input_shape": lambda t: "x".join(map(str, parse_shape(t))), "batch_size": _batch,
              "dtype": _choice(PRECISIONS), "optimizer": _choice(OPTIMIZERS), "device": _choice(devices, no_device),
              "ppp": _ppp, "variant": _choice(VARIANTS), "launch": _choice(LAUNCHES)}
    for key, url_key in PARAMS.items():
        text = params.get(url_key)
        if text is None or key == "model":
            continue
        try:
            out.values[key] = checks[key](text.strip())
        except (ValueError, core.CalcError) as e:
            notice(url_key, text, str(e), f"the default {defaults[key]}" if defaults[key] != "" else "the "
                   "network's own input shape")

    model, blob = params.get("model"), params.get(NET)
    default_model = f"the default network {defaults['model']}"
    if model == CUSTOM:
        if blob is None:
            notice("model", model, "the link does not carry the edited network: it was too large for a link; "
                   "import its IR JSON on the Network page", default_model)
        else:
            try:
                out.network = unpack_network(blob)
                out.values["model"] = CUSTOM
            except core.CalcError as e:
                notice(NET, blob, f"the edited network could not be read: {e.reason}", default_model)
    elif model is not None:
        if not models(model):
            notice("model", model, "not a network this app offers", default_model)
        elif model.startswith(TIMM_PREFIX):       # a name of the right form: is it a timm model here?
            try:
                check_input(model, "")
                out.values["model"] = model
            except Exception as e:  # noqa: BLE001 — a link is outside input and timm third-party code: any failure
                notice("model", model, f"cannot be loaded: {e}", default_model)     # is a notice, not a traceback
        else:
            out.values["model"] = model
    if blob is not None and model != CUSTOM:
        out.notices.append(f"Link parameter {NET}=… not used (it goes with model=custom, the link says "
                           f"model={model or defaults['model']}).")

    shape = out.values.get("input_shape")
    if shape:                                   # a valid shape: does the chosen network take it?
        chosen = out.network if out.values.get("model") == CUSTOM else out.values.get("model", defaults["model"])
        try:
            check_input(chosen, shape)
        except Exception as e:  # noqa: BLE001 — as above: a timm model traced at the link's shape may raise anything
            del out.values["input_shape"]
            notice(PARAMS["input_shape"], params[PARAMS["input_shape"]], str(e), "the network's own input shape")
    return out
