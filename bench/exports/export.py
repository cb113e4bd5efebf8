#!/usr/bin/env python3
"""Exports halfguard's real-export corpus: small random-init versions of 116 model families (the
real-exports issue's 18, 17 more, then batches of 12, 13, 12, 9, 15, 11 and 9), each with both of PyTorch's
ONNX exporters, plus calibration and verification samples and the FP32 outputs of onnxruntime.

Runs where PyTorch is (tested with torch 2.11, torchvision 0.26, transformers 5.x, onnx 1.23,
onnxscript, onnxruntime 1.30 on CPU); needs no network: every model is built from a config with
random weights, seeded. Each family keeps its real structure (blocks, norms, activations, attention
forms, positional encodings, masks) at small widths, depths and image sizes, so each model is a few
hundred KB.

    python3 bench/exports/export.py [--out DIR] [--only FAMILY,...] [--jobs N] [--timeout S]
    python3 bench/exports/export.py --probe          # build and run every family, export nothing

Writes WORK/models/<family>/<exporter>/{model.onnx, calib/0, calib/1, verify/0} (input_K.pb in
graph-input order; verify/0 also has output_K.pb, onnxruntime's FP32 outputs), WORK/models/
manifest.json, WORK/models/export.log, and packs WORK/models into OUT/halfguard-exports.tar.gz
(OUT is $OUT when set). exporter is 'torchscript' (dynamo=False, opset 17) or 'dynamo' (dynamo=True,
its default opset). A family that fails with one exporter is recorded in the manifest's
'failures' with the exception text; the others go on.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTERS = ("torchscript", "dynamo")
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
CLIP_NORM = ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))
VOCAB = 512
TAR_LIMIT = 15 * 1024 * 1024  # one tarball; the device returns files up to 16 MiB


# ---------------------------------------------------------------------------------------------
# Input specifications. kind: image (normalised pixels), pixels01, ids, mask, token_type, audio, mel.
# dims: the shape used for export; dyn: {axis: symbolic name}; sample: the shape of the samples
# (batch may differ from the export's: batch is symbolic).

def image(name, hw=64, norm=IMAGENET, sample_batch=1, rng_range=(-3.0, 3.0)):
    return dict(name=name, kind="image", dtype="float32", dims=[2, 3, hw, hw], dyn={0: "batch"},
                sample=[sample_batch, 3, hw, hw], norm=norm, range=list(rng_range))


def pixels01(name, hw=64):
    return dict(name=name, kind="pixels01", dtype="float32", dims=[2, 3, hw, hw], dyn={0: "batch"},
                sample=[1, 3, hw, hw], range=[0.0, 1.0])


def ids(name, seq=13, vocab=VOCAB, seqname="sequence"):
    return dict(name=name, kind="ids", dtype="int64", dims=[2, seq], dyn={0: "batch", 1: seqname},
                sample=[2, seq], range=[0, vocab - 1])


def mask(name, seq=13, seqname="sequence"):
    return dict(name=name, kind="mask", dtype="int64", dims=[2, seq], dyn={0: "batch", 1: seqname},
                sample=[2, seq], range=[0, 1])


def token_type(name, seq=13):
    return dict(name=name, kind="token_type", dtype="int64", dims=[2, seq],
                dyn={0: "batch", 1: "sequence"}, sample=[2, seq], range=[0, 1])


def audio(name, length=8000):
    return dict(name=name, kind="audio", dtype="float32", dims=[2, length],
                dyn={0: "batch", 1: "samples"}, sample=[1, length], range=[-1.0, 1.0])


def mel(name, bins=80, frames=128):
    # Whisper's encoder insists on exactly 2 x max_source_positions frames: only batch is symbolic.
    return dict(name=name, kind="mel", dtype="float32", dims=[2, bins, frames], dyn={0: "batch"},
                sample=[1, bins, frames], range=[-1.0, 1.0])


# ---------------------------------------------------------------------------------------------
# Model builders: each returns (module, [input specs], [output names], notes).

def _randomize_norm_stats(model, torch, seed):
    """Trained BatchNorms are not identities: give every BatchNorm (and HF's frozen BatchNorm) random
    running statistics and affine parameters, seeded, so the exported graphs carry realistic
    scale/shift constants."""
    g = torch.Generator().manual_seed(seed)
    n = 0
    for mod in model.modules():
        cls = type(mod).__name__
        if "BatchNorm" not in cls:
            continue
        rm, rv = getattr(mod, "running_mean", None), getattr(mod, "running_var", None)
        w, b = getattr(mod, "weight", None), getattr(mod, "bias", None)
        if rm is None or rv is None:
            continue
        with torch.no_grad():
            c = rm.shape[0]
            rm.copy_(torch.randn(c, generator=g) * 0.2)
            rv.copy_(torch.rand(c, generator=g) * 1.5 + 0.25)
            if w is not None:
                w.copy_(torch.rand(c, generator=g) * 1.0 + 0.5)
            if b is not None:
                b.copy_(torch.randn(c, generator=g) * 0.1)
        n += 1
    return n


def small_resnet_cls(torch):
    import torch.nn as nn
    from torchvision.models.resnet import ResNet

    class SmallResNet(ResNet):
        """torchvision's ResNet (same stem, _make_layer, blocks and forward) with narrow stages."""

        def __init__(self, block, layers, widths, num_classes=10, replace_stride_with_dilation=None):
            nn.Module.__init__(self)
            self._norm_layer = nn.BatchNorm2d
            self.inplanes = widths[0]
            self.dilation = 1
            if replace_stride_with_dilation is None:
                replace_stride_with_dilation = [False, False, False]
            self.groups = 1
            self.base_width = 64
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(self.inplanes)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, widths[0], layers[0])
            self.layer2 = self._make_layer(block, widths[1], layers[1], stride=2,
                                           dilate=replace_stride_with_dilation[0])
            self.layer3 = self._make_layer(block, widths[2], layers[2], stride=2,
                                           dilate=replace_stride_with_dilation[1])
            self.layer4 = self._make_layer(block, widths[3], layers[3], stride=2,
                                           dilate=replace_stride_with_dilation[2])
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(widths[3] * block.expansion, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    return SmallResNet


def build_resnet50(torch, attn):
    from torchvision.models.resnet import Bottleneck
    m = small_resnet_cls(torch)(Bottleneck, [2, 2, 2, 1], [8, 16, 24, 32])
    return m, [image("input")], ["logits"], "torchvision ResNet, Bottleneck blocks [2,2,2,1], widths 8-32 (x4)"


def build_mobilenetv3(torch, attn):
    from torchvision.models import mobilenet_v3_small
    m = mobilenet_v3_small(weights=None, width_mult=0.25, num_classes=10)
    return m, [image("input")], ["logits"], "torchvision mobilenet_v3_small, width_mult 0.25"


def build_efficientnet_b0(torch, attn):
    from torchvision.models.efficientnet import EfficientNet, MBConvConfig
    # B0's stages (expand, kernel, stride, in, out, layers) with narrower channels and fewer layers
    setting = [MBConvConfig(1, 3, 1, 8, 8, 1), MBConvConfig(6, 3, 2, 8, 8, 2),
               MBConvConfig(6, 5, 2, 8, 16, 2), MBConvConfig(6, 3, 2, 16, 16, 2),
               MBConvConfig(6, 5, 1, 16, 24, 2), MBConvConfig(6, 5, 2, 24, 24, 2),
               MBConvConfig(6, 3, 1, 24, 32, 1)]
    m = EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2, num_classes=10, last_channel=128)
    return m, [image("input")], ["logits"], "torchvision EfficientNet, B0's MBConv stages (SE, SiLU), narrow"


def build_convnext_t(torch, attn):
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    setting = [CNBlockConfig(8, 16, 1), CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 3),
               CNBlockConfig(64, None, 1)]
    m = ConvNeXt(setting, stochastic_depth_prob=0.1, layer_scale=1e-6, num_classes=10)
    return m, [image("input")], ["logits"], "torchvision ConvNeXt (LayerNorm2d, GELU, layer scale), dims 8-64, depths [1,1,3,1]"


def build_regnet(torch, attn):
    from torchvision.models.regnet import BlockParams, RegNet
    bp = BlockParams(depths=[1, 1, 2, 1], widths=[16, 24, 48, 96], group_widths=[8, 8, 8, 8],
                     bottleneck_multipliers=[1.0] * 4, strides=[2, 2, 2, 2], se_ratio=0.25)
    m = RegNet(bp, num_classes=10, stem_width=16)
    return m, [image("input")], ["logits"], "torchvision RegNetY (grouped conv, SE), widths 16-96"


def build_vit_b16(torch, attn):
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=32,
                          mlp_dim=128, num_classes=10)
    # torchvision zero-initialises the classifier (a trained one is not zero): draw it instead
    torch.nn.init.trunc_normal_(m.heads.head.weight, std=0.2)
    return m, [image("input")], ["logits"], "torchvision VisionTransformer, patch 16, 2 layers, dim 32"


def build_swin_t(torch, attn):
    from torchvision.models.swin_transformer import SwinTransformer
    m = SwinTransformer(patch_size=[4, 4], embed_dim=8, depths=[2, 2, 2, 1], num_heads=[1, 2, 4, 8],
                        window_size=[4, 4], stochastic_depth_prob=0.2, num_classes=10)
    return m, [image("input")], ["logits"], "torchvision SwinTransformer (shifted windows, rel. pos. bias, patch merging), window 4, dim 8"


def _dict_out(key):
    """The entry of a torchvision model whose forward returns a dict: its `key`."""
    def fn(mod, a):
        return mod(a)[key]

    return fn


def build_deeplabv3(torch, attn):
    import torch.nn as nn
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.resnet import Bottleneck
    from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3
    backbone = small_resnet_cls(torch)(Bottleneck, [1, 1, 1, 1], [8, 12, 16, 16],
                                       replace_stride_with_dilation=[False, True, True])
    backbone = IntermediateLayerGetter(backbone, return_layers={"layer4": "out"})
    head = nn.Sequential(ASPP(64, [12, 24, 36], out_channels=16),
                         nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 6, 1))
    m = DeepLabV3(backbone, head, None)
    return (m, _dict_out("out")), [image("input")], ["out"], "torchvision DeepLabV3 (dilated Bottleneck ResNet, ASPP with pooling branch, bilinear upsampling), 16 channels"


def _hf_cfg(cls, attn, **kw):
    if attn:
        kw["attn_implementation"] = attn
    return cls(**kw)


def _hf_model(cls, cfg, attn):
    m = cls(cfg)
    if attn and hasattr(m, "set_attn_implementation"):
        try:
            m.set_attn_implementation(attn)
        except Exception:
            pass
    return m


def _attn_of(m):
    cfg = getattr(m, "config", None)
    return getattr(cfg, "_attn_implementation", None) if cfg is not None else None


def _bert_like(m, what):
    def fn(mod, a, b, c):
        o = mod(input_ids=a, attention_mask=b, token_type_ids=c, return_dict=True)
        return o.last_hidden_state, o.pooler_output

    return (m, fn), [ids("input_ids"), mask("attention_mask"), token_type("token_type_ids")], \
        ["last_hidden_state", "pooler_output"], what


def build_bert(torch, attn):
    from transformers import BertConfig, BertModel
    cfg = _hf_cfg(BertConfig, attn, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=128, max_position_embeddings=128,
                  type_vocab_size=2)
    m = _hf_model(BertModel, cfg, attn)
    return _bert_like(m, "transformers BertModel, 2 layers, hidden 32")


def _causal_lm(m, what):
    """The entry of a decoder-only language model: logits from input_ids and attention_mask, no cache."""
    def fn(mod, a, b):
        return mod(input_ids=a, attention_mask=b, use_cache=False, return_dict=True).logits

    return (m, fn), [ids("input_ids"), mask("attention_mask")], ["logits"], what


def build_gpt2(torch, attn):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = _hf_cfg(GPT2Config, attn, vocab_size=VOCAB, n_positions=128, n_embd=32, n_layer=2,
                  n_head=4, use_cache=False)
    m = _hf_model(GPT2LMHeadModel, cfg, attn)
    return _causal_lm(m, "transformers GPT2LMHeadModel, 2 layers, n_embd 32, tied head")


def _seq2seq(m):
    """An encoder-decoder's entry: (model, call), its inputs and its logits output."""
    def fn(mod, a, b, c):
        return mod(input_ids=a, attention_mask=b, decoder_input_ids=c, use_cache=False,
                   return_dict=True).logits

    return (m, fn), [ids("input_ids"), mask("attention_mask"),
                     ids("decoder_input_ids", seq=7, seqname="decoder_sequence")], ["logits"]


def build_t5_small(torch, attn):
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = _hf_cfg(T5Config, attn, vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                  num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=32,
                  relative_attention_max_distance=128, dropout_rate=0.0, feed_forward_proj="relu",
                  decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, use_cache=False,
                  tie_word_embeddings=True)
    m = _hf_model(T5ForConditionalGeneration, cfg, attn)

    return *_seq2seq(m), \
        "transformers T5ForConditionalGeneration (RMS LayerNorm, relative position buckets, ReLU FF, tied head), d_model 32"


def build_llama(torch, attn):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = _hf_cfg(LlamaConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=88,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=128, hidden_act="silu", rms_norm_eps=1e-5,
                  tie_word_embeddings=False, use_cache=False)
    m = _hf_model(LlamaForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers LlamaForCausalLM (RMSNorm, rotary, SiLU gated MLP, GQA 4/2 heads), "
                         "hidden 32")


def _one_input(m, key, spec, out, what):
    """The entry of a model with one input, passed as keyword key, whose output is its return_dict's out."""
    def fn(mod, a):
        return getattr(mod(**{key: a}, return_dict=True), out)

    return (m, fn), [spec], [out], what


def build_whisper_encoder(torch, attn):
    from transformers import WhisperConfig
    cfg = _hf_cfg(WhisperConfig, attn, vocab_size=VOCAB, num_mel_bins=80, encoder_layers=2,
                  encoder_attention_heads=4, decoder_layers=1, decoder_attention_heads=4, d_model=48,
                  encoder_ffn_dim=96, decoder_ffn_dim=96, max_source_positions=64,
                  max_target_positions=32, use_cache=False)
    try:
        from transformers.models.whisper.modeling_whisper import WhisperEncoder
        m = _hf_model(WhisperEncoder, cfg, attn)
    except Exception:
        from transformers import WhisperModel
        m = _hf_model(WhisperModel, cfg, attn).get_encoder()
    return _one_input(m, "input_features", mel("input_features"), "last_hidden_state",
                      "transformers WhisperEncoder (conv stem, GELU, sinusoidal positions), 2 layers, d_model 48, "
                      "128 frames")


def build_wav2vec2(torch, attn):
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC
    cfg = _hf_cfg(Wav2Vec2Config, attn, vocab_size=32, hidden_size=48, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=96, conv_dim=(32,) * 7,
                  conv_stride=(5, 2, 2, 2, 2, 2, 2), conv_kernel=(10, 3, 3, 3, 3, 2, 2),
                  conv_bias=False, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                  feat_extract_norm="group", do_stable_layer_norm=False, mask_time_prob=0.0,
                  hidden_act="gelu")
    m = _hf_model(Wav2Vec2ForCTC, cfg, attn)
    return _one_input(m, "input_values", audio("input_values"), "logits",
                      "transformers Wav2Vec2ForCTC (GroupNorm conv feature encoder, weight-normed conv positions, "
                      "post-LN), hidden 48")


def build_segformer(torch, attn):
    from transformers import SegformerConfig, SegformerForSemanticSegmentation
    cfg = _hf_cfg(SegformerConfig, attn, num_channels=3, num_encoder_blocks=4, depths=[1, 1, 1, 1],
                  sr_ratios=[8, 4, 2, 1], hidden_sizes=[8, 16, 24, 32], patch_sizes=[7, 3, 3, 3],
                  strides=[4, 2, 2, 2], num_attention_heads=[1, 1, 2, 4], mlp_ratios=[4, 4, 4, 4],
                  decoder_hidden_size=32, num_labels=6)
    m = _hf_model(SegformerForSemanticSegmentation, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "logits",
                      "transformers SegformerForSemanticSegmentation (overlapping patch embeds, reduced-KV attention, "
                      "Mix-FFN, all-MLP head), hidden 8-32")


def build_clip_vit(torch, attn):
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection
    cfg = _hf_cfg(CLIPVisionConfig, attn, hidden_size=48, intermediate_size=192, projection_dim=32,
                  num_hidden_layers=2, num_attention_heads=4, image_size=64, patch_size=8,
                  hidden_act="quick_gelu", layer_norm_eps=1e-5)
    m = _hf_model(CLIPVisionModelWithProjection, cfg, attn)

    def fn(mod, a):
        o = mod(pixel_values=a, return_dict=True)
        return o.image_embeds, o.last_hidden_state

    lo = min((0 - mu) / sd for mu, sd in zip(*CLIP_NORM))
    hi = max((1 - mu) / sd for mu, sd in zip(*CLIP_NORM))
    spec = image("pixel_values", norm=CLIP_NORM, rng_range=(round(lo - 0.005, 2), round(hi + 0.005, 2)))
    return (m, fn), [spec], ["image_embeds", "last_hidden_state"], \
        "transformers CLIPVisionModelWithProjection (pre-LN, quick_gelu, class token), 2 layers, hidden 48, patch 8"


def _first_ok(attempts):
    errs = []
    for make in attempts:
        try:
            return make()
        except Exception as e:  # try the next spelling of the config
            errs.append(f"{type(e).__name__}: {e}")
    raise RuntimeError("no config spelling worked: " + " | ".join(errs))


def build_detr(torch, attn):
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

    def rn():
        return ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[16, 32, 64, 128],
                            depths=[1, 1, 1, 1], layer_type="bottleneck", hidden_act="relu",
                            out_features=["stage4"])

    base = dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10,
                num_labels=5, dropout=0.0, position_embedding_type="sine")
    if attn:
        base["attn_implementation"] = attn
    cfg = _first_ok([
        lambda: DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone=None,
                           backbone_config=rn(), **base),
        lambda: DetrConfig(use_timm_backbone=False, backbone_config=rn(), **base),
        lambda: DetrConfig(backbone_config=rn(), **base),
    ])
    m = _hf_model(DetrForObjectDetection, cfg, attn)
    frozen = sum(1 for x in m.modules() if "FrozenBatchNorm" in type(x).__name__)

    def fn(mod, a):
        o = mod(pixel_values=a, return_dict=True)
        return o.logits, o.pred_boxes

    return (m, fn), [image("pixel_values")], ["logits", "pred_boxes"], \
        f"transformers DetrForObjectDetection, transformers ResNet Bottleneck backbone ({frozen} frozen BatchNorms), sine positions, d_model 32"


def build_rt_detr(torch, attn):
    from transformers import RTDetrConfig, RTDetrForObjectDetection, RTDetrResNetConfig

    def bb():
        return RTDetrResNetConfig(num_channels=3, embedding_size=16, hidden_sizes=[16, 32, 64, 128],
                                  depths=[1, 1, 1, 1], layer_type="bottleneck", hidden_act="relu",
                                  out_features=["stage2", "stage3", "stage4"])

    base = dict(encoder_in_channels=[32, 64, 128], feat_strides=[8, 16, 32], encoder_hidden_dim=32,
                encoder_attention_heads=4, encoder_ffn_dim=64, encode_proj_layers=[2],
                hidden_expansion=0.5, d_model=32, decoder_in_channels=[32, 32, 32],
                num_feature_levels=3, decoder_layers=2, decoder_attention_heads=4,
                decoder_ffn_dim=64, decoder_n_points=4, num_queries=20, num_labels=5,
                num_denoising=0, dropout=0.0)
    if attn:
        base["attn_implementation"] = attn
    cfg = _first_ok([
        lambda: RTDetrConfig(backbone_config=bb(), use_pretrained_backbone=False, backbone=None,
                             use_timm_backbone=False, **base),
        lambda: RTDetrConfig(backbone_config=bb(), use_pretrained_backbone=False, **base),
        lambda: RTDetrConfig(backbone_config=bb(), **base),
    ])
    m = _hf_model(RTDetrForObjectDetection, cfg, attn)

    def fn(mod, a):
        o = mod(pixel_values=a, return_dict=True)
        return o.logits, o.pred_boxes

    return (m, fn), [pixels01("pixel_values")], ["logits", "pred_boxes"], \
        "transformers RTDetrForObjectDetection (ResNet-vd backbone, AIFI + CCFF hybrid encoder, deformable attention decoder), d_model 32"


# ---------------------------------------------------------------------------------------------
# More families, beyond the real-exports issue's 18: other position encodings (DeBERTa's log buckets,
# Swin V2's log-spaced continuous bias, BEiT's relative bias, ALiBi, partial rotary), other norms
# (Gemma's 1 + w RMSNorm, ConvNeXt V2's global response norm, layer scale), other forms (an
# encoder-decoder with learned positions, GQA with biases, MobileViT's unfold/fold, MaxViT's grid
# attention, DINOv2's interpolated positions, RAFT's correlation lookups through grid_sample,
# ShuffleNet's channel shuffle, DenseNet's concatenations, a Conformer's relative attention).

def _encoder(m, what, out="last_hidden_state"):
    def fn(mod, a, b):
        return getattr(mod(input_ids=a, attention_mask=b, return_dict=True), out)

    return (m, fn), [ids("input_ids"), mask("attention_mask")], [out], what


def build_deberta_v2(torch, attn):
    from transformers import DebertaV2Config, DebertaV2Model
    cfg = _hf_cfg(DebertaV2Config, attn, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
                  relative_attention=True, position_buckets=32, max_relative_positions=64,
                  pos_att_type=["p2c", "c2p"], type_vocab_size=0, norm_rel_ebd="layer_norm",
                  share_att_key=True)
    m = _hf_model(DebertaV2Model, cfg, attn)
    return _encoder(m, "transformers DebertaV2Model (disentangled attention, log-bucketed relative positions), hidden 32")


def build_distilbert(torch, attn):
    from transformers import DistilBertConfig, DistilBertModel
    cfg = _hf_cfg(DistilBertConfig, attn, vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                  max_position_embeddings=128)
    m = _hf_model(DistilBertModel, cfg, attn)
    return _encoder(m, "transformers DistilBertModel, 2 layers, dim 32")


def build_bart(torch, attn):
    from transformers import BartConfig, BartForConditionalGeneration
    cfg = _hf_cfg(BartConfig, attn, vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                  decoder_ffn_dim=64, max_position_embeddings=128, use_cache=False, pad_token_id=1,
                  bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    m = _hf_model(BartForConditionalGeneration, cfg, attn)

    return *_seq2seq(m), \
        "transformers BartForConditionalGeneration (learned positions, post-LN, GELU), d_model 32"


def build_gpt_neox(torch, attn):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    cfg = _hf_cfg(GPTNeoXConfig, attn, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, rotary_pct=0.25,
                  max_position_embeddings=128, use_parallel_residual=True, use_cache=False)
    m = _hf_model(GPTNeoXForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers GPTNeoXForCausalLM (partial rotary, parallel residual), hidden 32")


def build_bloom(torch, attn):
    from transformers import BloomConfig, BloomForCausalLM
    cfg = _hf_cfg(BloomConfig, attn, vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4, use_cache=False)
    m = _hf_model(BloomForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers BloomForCausalLM (ALiBi, embedding LayerNorm), hidden 32")


def build_gemma(torch, attn):
    from transformers import GemmaConfig, GemmaForCausalLM
    cfg = _hf_cfg(GemmaConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=8,
                  max_position_embeddings=128, use_cache=False)
    m = _hf_model(GemmaForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers GemmaForCausalLM (RMSNorm with 1 + w, sqrt(d)-scaled embeddings, "
                         "GeGLU, MQA), hidden 32")


def build_qwen2(torch, attn):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    cfg = _hf_cfg(Qwen2Config, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=128, use_cache=False, tie_word_embeddings=False)
    m = _hf_model(Qwen2ForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers Qwen2ForCausalLM (QKV biases, rotary, GQA), hidden 32")


def build_swinv2(torch, attn):
    from transformers import Swinv2Config, Swinv2Model
    cfg = _hf_cfg(Swinv2Config, attn, image_size=64, patch_size=4, embed_dim=8, depths=[2, 2, 2, 1],
                  num_heads=[1, 2, 4, 8], window_size=4)
    m = _hf_model(Swinv2Model, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "pooler_output",
                      "transformers Swinv2Model (cosine attention, log-spaced continuous position bias, "
                      "res-post-norm), window 4, dim 8")


def build_beit(torch, attn):
    from transformers import BeitConfig, BeitModel
    cfg = _hf_cfg(BeitConfig, attn, image_size=64, patch_size=8, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, use_relative_position_bias=True,
                  layer_scale_init_value=0.1, use_mean_pooling=True)
    m = _hf_model(BeitModel, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "pooler_output",
                      "transformers BeitModel (relative position bias, layer scale, mean pooling), hidden 32")


def build_dinov2(torch, attn):
    from transformers import Dinov2Config, Dinov2Model
    cfg = _hf_cfg(Dinov2Config, attn, image_size=64, patch_size=8, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, mlp_ratio=2, layerscale_value=0.1)
    m = _hf_model(Dinov2Model, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "pooler_output",
                      "transformers Dinov2Model (layer scale, interpolated position embeddings), hidden 32")


def build_mobilevit(torch, attn):
    from transformers import MobileViTConfig, MobileViTForImageClassification
    cfg = _hf_cfg(MobileViTConfig, attn, image_size=64, patch_size=2, hidden_sizes=[16, 24, 32],
                  neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_attention_heads=4, num_labels=10)
    m = _hf_model(MobileViTForImageClassification, cfg, attn)
    return _one_input(m, "pixel_values", pixels01("pixel_values"), "logits",
                      "transformers MobileViTForImageClassification (MobileNetV2 blocks, unfold/fold transformer), narrow")


def build_convnextv2(torch, attn):
    from transformers import ConvNextV2Config, ConvNextV2ForImageClassification
    cfg = _hf_cfg(ConvNextV2Config, attn, num_channels=3, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 2, 1],
                  num_labels=10)
    m = _hf_model(ConvNextV2ForImageClassification, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "logits",
                      "transformers ConvNextV2ForImageClassification (global response normalization), dims 8-64")


def build_wav2vec2_conformer(torch, attn):
    from transformers import Wav2Vec2ConformerConfig, Wav2Vec2ConformerForCTC
    cfg = _hf_cfg(Wav2Vec2ConformerConfig, attn, vocab_size=32, hidden_size=48, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=96, conv_dim=(32,) * 7,
                  conv_stride=(5, 2, 2, 2, 2, 2, 2), conv_kernel=(10, 3, 3, 3, 3, 2, 2), conv_bias=False,
                  num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, feat_extract_norm="group",
                  mask_time_prob=0.0, position_embeddings_type="relative", conv_depthwise_kernel_size=7)
    m = _hf_model(Wav2Vec2ConformerForCTC, cfg, attn)
    return _one_input(m, "input_values", audio("input_values"), "logits",
                      "transformers Wav2Vec2ConformerForCTC (relative-position attention, depthwise conv "
                      "module, GLU), hidden 48")


def build_maxvit(torch, attn):
    from torchvision.models.maxvit import MaxVit
    m = MaxVit(input_size=(64, 64), stem_channels=8, partition_size=2, block_channels=[16, 32],
               block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=10)
    return m, [image("input")], ["logits"], "torchvision MaxVit (MBConv with SE, block and grid attention, relative bias), 16-32 channels"


def build_raft_small(torch, attn):
    import torch.nn as nn
    from torchvision.models.optical_flow import raft_small

    class Flow(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = raft_small(weights=None, progress=False)

        def forward(self, a, b):
            return self.m(a, b, num_flow_updates=4)[-1]

    half = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    # RAFT's correlation pyramid needs feature maps of 16 x 16: images of 128 x 128
    return Flow(), [image("image1", hw=128, norm=half, rng_range=(-1.0, 1.0)),
                    image("image2", hw=128, norm=half, rng_range=(-1.0, 1.0))], ["flow"], \
        "torchvision raft_small (correlation pyramid looked up with grid_sample, ConvGRU), 4 updates, 128 x 128"


def build_shufflenet_v2(torch, attn):
    from torchvision.models.shufflenetv2 import ShuffleNetV2
    m = ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10)
    return m, [image("input")], ["logits"], "torchvision ShuffleNetV2 (channel split and shuffle), 8-128 channels"


def build_densenet(torch, attn):
    from torchvision.models.densenet import DenseNet
    m = DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, bn_size=2, num_classes=10)
    return m, [image("input")], ["logits"], "torchvision DenseNet (dense concatenation, transitions), growth 8"


# A third batch: more encoder and decoder families from transformers, a detector, and torchvision CNNs
# without the residual structure of the ones above.

def build_roberta(torch, attn):
    from transformers import RobertaConfig, RobertaModel
    cfg = _hf_cfg(RobertaConfig, attn, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=130,
                  type_vocab_size=1, pad_token_id=1)
    m = _hf_model(RobertaModel, cfg, attn)
    return _encoder(m, "transformers RobertaModel (positions from the padding mask by cumsum), hidden 32")


def build_albert(torch, attn):
    from transformers import AlbertConfig, AlbertModel
    cfg = _hf_cfg(AlbertConfig, attn, vocab_size=VOCAB, embedding_size=16, hidden_size=32,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=128, hidden_act="gelu_new")
    m = _hf_model(AlbertModel, cfg, attn)
    return _encoder(m, "transformers AlbertModel (factorised embeddings, shared layers, gelu_new), hidden 32")


def build_electra(torch, attn):
    from transformers import ElectraConfig, ElectraModel
    cfg = _hf_cfg(ElectraConfig, attn, vocab_size=VOCAB, embedding_size=16, hidden_size=32,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=128)
    m = _hf_model(ElectraModel, cfg, attn)
    return _encoder(m, "transformers ElectraModel (embedding projection), hidden 32")


def build_mpnet(torch, attn):
    from transformers import MPNetConfig, MPNetModel
    cfg = _hf_cfg(MPNetConfig, attn, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=130,
                  relative_attention_num_buckets=32)
    m = _hf_model(MPNetModel, cfg, attn)
    return _encoder(m, "transformers MPNetModel (relative position buckets shared by layers), hidden 32")


def build_opt(torch, attn):
    from transformers import OPTConfig, OPTForCausalLM
    cfg = _hf_cfg(OPTConfig, attn, vocab_size=VOCAB, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=128, word_embed_proj_dim=32,
                  use_cache=False)
    m = _hf_model(OPTForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers OPTForCausalLM (learned positions offset by 2, pre-LN, ReLU), hidden 32")


def build_gptj(torch, attn):
    from transformers import GPTJConfig, GPTJForCausalLM
    cfg = _hf_cfg(GPTJConfig, attn, vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                  n_positions=128, use_cache=False)
    m = _hf_model(GPTJForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers GPTJForCausalLM (interleaved partial rotary, parallel block), n_embd 32")


def build_phi(torch, attn):
    from transformers import PhiConfig, PhiForCausalLM
    cfg = _hf_cfg(PhiConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, partial_rotary_factor=0.5,
                  max_position_embeddings=128, use_cache=False)
    m = _hf_model(PhiForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers PhiForCausalLM (partial rotary, parallel block, LayerNorm), hidden 32")


def build_mistral(torch, attn):
    from transformers import MistralConfig, MistralForCausalLM
    cfg = _hf_cfg(MistralConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=128, sliding_window=8, use_cache=False)
    m = _hf_model(MistralForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers MistralForCausalLM (sliding window 8, GQA, rotary), hidden 32")


def build_yolos(torch, attn):
    from transformers import YolosConfig, YolosForObjectDetection
    cfg = _hf_cfg(YolosConfig, attn, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, image_size=[64, 64], patch_size=16, num_detection_tokens=10,
                  num_labels=5)
    m = _hf_model(YolosForObjectDetection, cfg, attn)

    def fn(mod, a):
        o = mod(pixel_values=a, return_dict=True)
        return o.logits, o.pred_boxes

    return (m, fn), [image("pixel_values")], ["logits", "pred_boxes"], \
        "transformers YolosForObjectDetection (ViT with detection tokens, interpolated positions), hidden 32"


def build_vgg11_bn(torch, attn):
    from torchvision.models.vgg import VGG, make_layers
    # VGG-11's layout (8 convs, 5 pools) with BatchNorm at an eighth of its widths; torchvision's head
    # pools to 7x7 into a 25088 x 4096 Linear (500 MB, and TorchScript cannot export the 2x2 -> 7x7
    # adaptive pool of a 64-pixel input): pool to 1x1 into a small MLP instead
    m = VGG(make_layers([8, "M", 16, "M", 32, 32, "M", 64, 64, "M", 64, 64, "M"], batch_norm=True),
            num_classes=10)
    m.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
    m.classifier = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(True), torch.nn.Dropout(),
                                       torch.nn.Linear(64, 10))
    _randomize_norm_stats(m, torch, 211)
    return m, [image("input")], ["logits"], "torchvision VGG-11 layout with BatchNorm, widths / 8, small MLP head"


def build_squeezenet(torch, attn):
    from torchvision.models import squeezenet1_1
    m = squeezenet1_1(num_classes=10)
    return m, [image("input")], ["logits"], "torchvision squeezenet1_1 (fire modules, no norm)"


def build_mnasnet(torch, attn):
    from torchvision.models import mnasnet0_5
    m = mnasnet0_5(num_classes=10)
    _randomize_norm_stats(m, torch, 214)
    return m, [image("input")], ["logits"], "torchvision mnasnet0_5 (inverted residuals, depthwise convs)"



# ---------------------------------------------------------------------------------------------
# A fourth batch: forms the first three lack. Tanh soft-capping (Gemma 2), mixture-of-experts routing
# (Mixtral), multi-query attention (GPTBigCode, Falcon), a norm-free bottleneck BERT (MobileBERT's
# NoNorm), grouped 1-D convolutions (SqueezeBERT), pixel shuffle (Swin2SR), dense prediction from a
# ViT (DPT), 5-D convolutions (a 3-D CNN), a hard-sigmoid gated segmentation head (LR-ASPP),
# recurrent layers (LSTM, GRU) and attention biases on a conv stem with BatchNorm1d (LeViT).

def video(name, frames=4, hw=32):
    return dict(name=name, kind="video", dtype="float32", dims=[2, 3, frames, hw, hw], dyn={0: "batch"},
                sample=[1, 3, frames, hw, hw], norm=IMAGENET, range=[-3.0, 3.0])


def build_gemma2(torch, attn):
    from transformers import Gemma2Config, Gemma2ForCausalLM
    cfg = _hf_cfg(Gemma2Config, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                  max_position_embeddings=128, sliding_window=8, attn_logit_softcapping=50.0,
                  final_logit_softcapping=30.0, query_pre_attn_scalar=8, use_cache=False)
    m = _hf_model(Gemma2ForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers Gemma2ForCausalLM (tanh soft-capped logits, pre and post norms, "
                         "alternating sliding window), hidden 32")


def build_mixtral(torch, attn):
    from transformers import MixtralConfig, MixtralForCausalLM
    cfg = _hf_cfg(MixtralConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=48,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=128,
                  use_cache=False)
    m = _hf_model(MixtralForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers MixtralForCausalLM (top-2 of 4 experts, softmax routing), hidden 32")


def build_gpt_bigcode(torch, attn):
    from transformers import GPTBigCodeConfig, GPTBigCodeForCausalLM
    cfg = _hf_cfg(GPTBigCodeConfig, attn, vocab_size=VOCAB, n_positions=128, n_embd=32, n_layer=2,
                  n_head=4, multi_query=True, use_cache=False)
    m = _hf_model(GPTBigCodeForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers GPTBigCodeForCausalLM (multi-query attention), n_embd 32")


def build_falcon(torch, attn):
    from transformers import FalconConfig, FalconForCausalLM
    cfg = _hf_cfg(FalconConfig, attn, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, multi_query=True, parallel_attn=True, alibi=False,
                  new_decoder_architecture=False, max_position_embeddings=128, use_cache=False)
    m = _hf_model(FalconForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers FalconForCausalLM (multi-query, parallel attention and MLP, rotary), hidden 32")


def build_mobilebert(torch, attn):
    from transformers import MobileBertConfig, MobileBertModel
    cfg = _hf_cfg(MobileBertConfig, attn, vocab_size=VOCAB, hidden_size=32, embedding_size=16,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  intra_bottleneck_size=16, num_feedforward_networks=2, normalization_type="no_norm",
                  max_position_embeddings=128, type_vocab_size=2)
    m = _hf_model(MobileBertModel, cfg, attn)
    # NoNorm is x * weight + bias, initialised to 1 and 0: draw them, as training would
    with torch.no_grad():
        for mod in m.modules():
            if type(mod).__name__ == "NoNorm":
                mod.weight.normal_(1.0, 0.3)
                mod.bias.normal_(0.0, 0.1)
    return _bert_like(m, "transformers MobileBertModel (bottlenecks, stacked FFNs, NoNorm), hidden 32")


def build_squeezebert(torch, attn):
    from transformers import SqueezeBertConfig, SqueezeBertModel
    cfg = _hf_cfg(SqueezeBertConfig, attn, vocab_size=VOCAB, hidden_size=32, embedding_size=32,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=128, type_vocab_size=2, q_groups=4, k_groups=4, v_groups=4,
                  post_attention_groups=1, intermediate_groups=4, output_groups=4)
    m = _hf_model(SqueezeBertModel, cfg, attn)
    return _bert_like(m, "transformers SqueezeBertModel (grouped 1-D convolutions for projections), hidden 32")


def build_swin2sr(torch, attn):
    from transformers import Swin2SRConfig, Swin2SRForImageSuperResolution
    cfg = _hf_cfg(Swin2SRConfig, attn, image_size=32, patch_size=1, num_channels=3, embed_dim=16,
                  depths=[2, 2], num_heads=[2, 2], window_size=4, upscale=2, upsampler="pixelshuffle",
                  img_range=1.0, mlp_ratio=2.0)
    m = _hf_model(Swin2SRForImageSuperResolution, cfg, attn)
    return _one_input(m, "pixel_values", pixels01("pixel_values", hw=32), "reconstruction",
                      "transformers Swin2SRForImageSuperResolution (Swin V2 blocks, pixel shuffle x2), dim 16")


def build_dpt(torch, attn):
    from transformers import DPTConfig, DPTForDepthEstimation
    cfg = _hf_cfg(DPTConfig, attn, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                  intermediate_size=64, image_size=64, patch_size=16, backbone_out_indices=[0, 1, 2, 3],
                  neck_hidden_sizes=[8, 16, 24, 32], fusion_hidden_size=16,
                  reassemble_factors=[4, 2, 1, 0.5], head_in_index=-1, readout_type="project")
    m = _hf_model(DPTForDepthEstimation, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "predicted_depth",
                      "transformers DPTForDepthEstimation (ViT readout projection, reassemble, fusion, "
                      "transposed convs, depth head), hidden 32")


def build_c3d_small(torch, attn):
    import torch.nn as nn

    class C3D(nn.Module):
        """A small video classifier: 3-D convs with BatchNorm3d, a (2+1)-D block, 3-D pools."""

        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
                                      nn.BatchNorm3d(8), nn.ReLU(inplace=True))
            self.block = nn.Sequential(nn.Conv3d(8, 16, (1, 3, 3), padding=(0, 1, 1), bias=False),
                                       nn.BatchNorm3d(16), nn.ReLU(inplace=True),
                                       nn.Conv3d(16, 16, (3, 1, 1), padding=(1, 0, 0), bias=False),
                                       nn.BatchNorm3d(16), nn.ReLU(inplace=True))
            self.pool = nn.MaxPool3d((1, 2, 2))
            self.down = nn.Sequential(nn.Conv3d(16, 32, 3, stride=2, padding=1, bias=False),
                                      nn.BatchNorm3d(32), nn.ReLU(inplace=True))
            self.head = nn.Sequential(nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(32, 10))

        def forward(self, x):
            return self.head(self.down(self.pool(self.block(self.stem(x)))))

    return C3D(), [video("input")], ["logits"], "a small 3-D CNN (Conv3d, BatchNorm3d, (2+1)-D block, MaxPool3d), widths 8-32"


def build_lraspp(torch, attn):
    from torchvision.models import mobilenet_v3_small
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.lraspp import LRASPP
    features = mobilenet_v3_small(weights=None, width_mult=0.5).features
    stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    low, high = stages[-4], stages[-1]
    low_ch, high_ch = features[low].out_channels, features[high].out_channels
    backbone = IntermediateLayerGetter(features, return_layers={str(low): "low", str(high): "high"})
    m = LRASPP(backbone, low_ch, high_ch, 6, inter_channels=16)
    return (m, _dict_out("out")), [image("input")], ["out"], \
        "torchvision LRASPP on mobilenet_v3_small x0.5 (sigmoid-gated pooling branch, bilinear upsampling)"


def build_lstm_tagger(torch, attn):
    import torch.nn as nn

    class Tagger(nn.Module):
        """Embedding, a 2-layer bidirectional LSTM and a per-token classifier."""

        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 32)
            self.rnn = nn.LSTM(32, 32, num_layers=2, bidirectional=True, batch_first=True)
            self.out = nn.Linear(64, 10)

        def forward(self, x):
            y, _ = self.rnn(self.emb(x))
            return self.out(y)

    return Tagger(), [ids("input_ids")], ["logits"], "Embedding + 2-layer bidirectional LSTM (32) + Linear"


def build_gru_audio(torch, attn):
    import torch.nn as nn

    class GRUNet(nn.Module):
        """Mel frames through a 2-layer GRU and a linear head on the last step."""

        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(80, 48, num_layers=2, batch_first=True)
            self.out = nn.Linear(48, 10)

        def forward(self, x):
            y, _ = self.rnn(x.transpose(1, 2))
            return self.out(y[:, -1])

    return GRUNet(), [mel("input_features")], ["logits"], "mel frames through a 2-layer GRU (48) and a linear head"


def build_levit(torch, attn):
    from transformers import LevitConfig, LevitForImageClassification
    cfg = _hf_cfg(LevitConfig, attn, image_size=64, num_channels=3, kernel_size=3, stride=2, padding=1,
                  patch_size=16, hidden_sizes=[16, 24, 32], num_attention_heads=[1, 2, 4],
                  depths=[1, 1, 1], key_dim=[8, 8, 8], drop_path_rate=0, mlp_ratio=[2, 2, 2],
                  attention_ratio=[2, 2, 2], num_labels=10,
                  down_ops=[["Subsample", 8, 16 // 8, 4, 2, 2], ["Subsample", 8, 24 // 8, 4, 2, 2]])
    m = _hf_model(LevitForImageClassification, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "logits",
                      "transformers LevitForImageClassification (conv stem, BatchNorm1d, attention biases, "
                      "hardswish, shrinking attention), dims 16-32")



# ---------------------------------------------------------------------------------------------
# A fifth batch: timm's vision forms (token-mixing MLPs, cross-covariance attention with learned
# temperature, 2-D rotary positions, depthwise patch mixing, split depthwise-transposed attention),
# a neural audio codec (weight-normed 1-D convs and an LSTM), sequence pooling (Funnel), span-based
# dynamic convolution (ConvBERT), pooling as the token mixer
# (PoolFormer), inverted residuals with ReLU6 (MobileNetV2), QK-norm (Qwen3) and Cohere's parallel
# block with a logit scale.

def _timm_one(m, what, spec=None):
    return m, [spec or image("input")], ["logits"], what


def build_mlp_mixer(torch, attn):
    from timm.models.mlp_mixer import MlpMixer
    m = MlpMixer(num_classes=10, img_size=64, patch_size=16, num_blocks=2, embed_dim=32)
    # timm zero-initialises the classifier (every logit 0 whatever the input): draw it, as a trained one is
    torch.nn.init.trunc_normal_(m.head.weight, std=0.2)
    return _timm_one(m, "timm MlpMixer (token- and channel-mixing MLPs), patch 16, 2 blocks, dim 32")


def build_xcit(torch, attn):
    from timm.models.xcit import Xcit
    m = Xcit(img_size=64, patch_size=16, num_classes=10, embed_dim=32, depth=2, num_heads=4, cls_attn_layers=1,
             eta=1.0, tokens_norm=True)
    return _timm_one(m, "timm XCiT (cross-covariance attention: L2-normalized q, k and a learned temperature; "
                        "local patch interaction; class attention), dim 32")


def build_eva(torch, attn):
    from timm.models.eva import Eva
    m = Eva(img_size=64, patch_size=16, num_classes=10, embed_dim=32, depth=2, num_heads=4, use_rot_pos_emb=True,
            ref_feat_shape=(4, 4), swiglu_mlp=True, mlp_ratio=2.0)
    return _timm_one(m, "timm EVA (2-D rotary positions in vision, SwiGLU), dim 32")


def build_convmixer(torch, attn):
    from timm.models.convmixer import ConvMixer
    m = ConvMixer(dim=32, depth=2, kernel_size=5, patch_size=8, num_classes=10)
    return _timm_one(m, "timm ConvMixer (patch conv, depthwise 5x5 with a residual, pointwise, GELU, "
                        "BatchNorm), dim 32")


def build_edgenext(torch, attn):
    from timm.models.edgenext import EdgeNeXt
    m = EdgeNeXt(num_classes=10, dims=(8, 16, 24, 32), depths=(1, 1, 2, 1), global_block_counts=(0, 1, 1, 1),
                 heads=(2, 2, 2, 2), d2_scales=(2, 2, 3, 4))
    return _timm_one(m, "timm EdgeNeXt (split depthwise-transposed attention: cross-covariance over channels, "
                        "conv encoders, layer scale), dims 8-32")


def build_encodec(torch, attn):
    from transformers import EncodecConfig, EncodecModel
    cfg = _hf_cfg(EncodecConfig, attn, target_bandwidths=[1.5], sampling_rate=8000, audio_channels=1,
                  hidden_size=16, num_filters=4, num_residual_layers=1, upsampling_ratios=[4, 2],
                  codebook_size=64, codebook_dim=16, num_lstm_layers=1, use_causal_conv=True)
    m = _hf_model(EncodecModel, cfg, attn)

    class Enc(torch.nn.Module):
        """The encoder half up to its continuous latents (the quantizer's argmin is no float path)."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m.encoder(x.unsqueeze(1))

    spec = audio("input_values")
    return Enc(m), [spec], ["latents"], "transformers EncodecModel's encoder (weight-normed causal 1-D convs, " \
        "ELU residual units, an LSTM), hidden 16"


def build_funnel(torch, attn):
    from transformers import FunnelConfig, FunnelBaseModel
    cfg = _hf_cfg(FunnelConfig, attn, vocab_size=VOCAB, block_sizes=[1, 1], d_model=32, n_head=4, d_head=8,
                  d_inner=64, max_position_embeddings=128, type_vocab_size=2)
    m = _hf_model(FunnelBaseModel, cfg, attn)
    return _encoder(m, "transformers FunnelBaseModel (mean-pooled sequence between blocks, relative "
                       "attention), d_model 32")


def build_convbert(torch, attn):
    from transformers import ConvBertConfig, ConvBertModel
    cfg = _hf_cfg(ConvBertConfig, attn, vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=128, type_vocab_size=2,
                  embedding_size=32, head_ratio=2, conv_kernel_size=5, num_groups=1)
    m = _hf_model(ConvBertModel, cfg, attn)
    return _encoder(m, "transformers ConvBertModel (span-based dynamic convolution beside attention), hidden 32")


def build_poolformer(torch, attn):
    from transformers import PoolFormerConfig, PoolFormerForImageClassification
    cfg = _hf_cfg(PoolFormerConfig, attn, num_channels=3, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1],
                  pool_size=3, num_labels=10, layer_scale_init_value=1e-5)
    m = _hf_model(PoolFormerForImageClassification, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "logits",
                      "transformers PoolFormerForImageClassification (AvgPool(x) - x as the token mixer, "
                      "GroupNorm, layer scale 1e-5), dims 8-32")


def build_mobilenet_v2(torch, attn):
    from torchvision.models import mobilenet_v2
    m = mobilenet_v2(weights=None, width_mult=0.35, num_classes=10)
    return m, [image("input")], ["logits"], "torchvision mobilenet_v2 x0.35 (inverted residuals, ReLU6)"


def build_qwen3(torch, attn):
    from transformers import Qwen3Config, Qwen3ForCausalLM
    cfg = _hf_cfg(Qwen3Config, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                  max_position_embeddings=128, use_cache=False, tie_word_embeddings=False)
    m = _hf_model(Qwen3ForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers Qwen3ForCausalLM (RMSNorm on q and k per head, GQA, rotary), hidden 32")


def build_cohere(torch, attn):
    from transformers import CohereConfig, CohereForCausalLM
    cfg = _hf_cfg(CohereConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=128, logit_scale=0.0625, use_cache=False)
    m = _hf_model(CohereForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers CohereForCausalLM (parallel attention and MLP, bias-free LayerNorm, "
                         "interleaved rotary, logit scale), hidden 32")



# ---------------------------------------------------------------------------------------------
# A sixth batch: what deployments build themselves. A YOLO-style detector (Conv-BN-SiLU, C3 blocks,
# SPPF, a decoding head with grid and anchor arithmetic), a diffusion U-Net (a sinusoidal embedding
# of timesteps up to 999, GroupNorm, SiLU, attention at low resolution), an ESRGAN-style RRDB
# super-resolution net (no normalization, residual scaling), a VAE decoder, a PointNet, a dilated
# causal TCN, timm's ResNetV2 (weight-standardized convs, GroupNorm) and NF-ResNet (no normalization:
# scaled weight standardization and scalar gains), and torchvision's SSDlite.

def latent(name, ch=4, hw=16):
    return dict(name=name, kind="latent", dtype="float32", dims=[2, ch, hw, hw], dyn={0: "batch"},
                sample=[1, ch, hw, hw], range=[-4.0, 4.0])


def timestep(name):
    return dict(name=name, kind="timestep", dtype="float32", dims=[2], dyn={0: "batch"}, sample=[1],
                range=[0.0, 999.0])


def points(name, n=256):
    return dict(name=name, kind="points", dtype="float32", dims=[2, 3, n], dyn={0: "batch", 2: "points"},
                sample=[1, 3, n], range=[-1.0, 1.0])


def build_yolo_small(torch, attn):
    import torch.nn as nn

    def cbs(ci, co, k=1, s=1):
        return nn.Sequential(nn.Conv2d(ci, co, k, s, (k - 1) // 2, bias=False), nn.BatchNorm2d(co), nn.SiLU())

    class C3(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.a, self.b, self.out = cbs(c, c // 2), cbs(c, c // 2), cbs(c, c)
            self.m = nn.Sequential(cbs(c // 2, c // 2), cbs(c // 2, c // 2, 3))

        def forward(self, x):
            a = self.a(x)
            return self.out(torch.cat([a + self.m(a), self.b(x)], 1))

    class SPPF(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1, self.cv2, self.m = cbs(c, c // 2), cbs(c * 2, c), nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.m(x)
            y2 = self.m(y1)
            return self.cv2(torch.cat([x, y1, y2, self.m(y2)], 1))

    class Yolo(nn.Module):
        """YOLOv5's shape at widths 8-32: two output scales, anchors decoded in the graph."""

        def __init__(self, nc=5, na=3):
            super().__init__()
            self.nc, self.na = nc, na
            self.stem = nn.Sequential(cbs(3, 8, 6, 2), cbs(8, 16, 3, 2), C3(16), cbs(16, 32, 3, 2), C3(32))
            self.deep = nn.Sequential(cbs(32, 32, 3, 2), C3(32), SPPF(32))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.fuse = nn.Sequential(cbs(64, 32), C3(32))
            self.heads = nn.ModuleList([nn.Conv2d(32, na * (nc + 5), 1), nn.Conv2d(32, na * (nc + 5), 1)])
            self.register_buffer("anchors", torch.tensor([[[10., 13.], [16., 30.], [33., 23.]],
                                                          [[30., 61.], [62., 45.], [59., 119.]]]))
            self.strides = (8, 16)

        def forward(self, x):
            p3 = self.stem(x)
            p4 = self.deep(p3)
            p3 = self.fuse(torch.cat([self.up(p4), p3], 1))
            outs = []
            for i, f in enumerate((p3, p4)):
                y = self.heads[i](f)
                b, _, h, w = y.shape
                y = y.view(b, self.na, self.nc + 5, h, w).permute(0, 1, 3, 4, 2).sigmoid()
                gy, gx = torch.meshgrid(torch.arange(h, dtype=y.dtype), torch.arange(w, dtype=y.dtype), indexing="ij")
                grid = torch.stack((gx, gy), 2).view(1, 1, h, w, 2)
                xy = (y[..., :2] * 2 - 0.5 + grid) * self.strides[i]
                wh = (y[..., 2:4] * 2) ** 2 * self.anchors[i].view(1, self.na, 1, 1, 2)
                outs.append(torch.cat((xy, wh, y[..., 4:]), -1).view(b, -1, self.nc + 5))
            return torch.cat(outs, 1)

    return Yolo(), [pixels01("images", hw=64)], ["detections"], \
        "a YOLOv5-style detector (Conv-BN-SiLU, C3, SPPF, FPN concat, sigmoid head decoding grid and anchors), widths 8-32"


def build_unet_small(torch, attn):
    import math
    import torch.nn as nn

    class Res(nn.Module):
        def __init__(self, ci, co, temb):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(4, ci), nn.Conv2d(ci, co, 3, padding=1)
            self.t = nn.Linear(temb, co)
            self.n2, self.c2 = nn.GroupNorm(4, co), nn.Conv2d(co, co, 3, padding=1)
            self.skip = nn.Conv2d(ci, co, 1) if ci != co else nn.Identity()

        def forward(self, x, t):
            h = self.c1(nn.functional.silu(self.n1(x)))
            h = h + self.t(nn.functional.silu(t))[:, :, None, None]
            h = self.c2(nn.functional.silu(self.n2(h)))
            return self.skip(x) + h

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n, self.qkv, self.o = nn.GroupNorm(4, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = self.qkv(self.n(x)).reshape(b, 3, c, h * w).unbind(1)
            a = torch.softmax(q.transpose(1, 2) @ k / math.sqrt(c), -1)
            return x + self.o((v @ a.transpose(1, 2)).reshape(b, c, h, w))

    class UNet(nn.Module):
        """A diffusion U-Net's shape: timestep embedding, two levels, attention at the bottom."""

        def __init__(self):
            super().__init__()
            self.temb = nn.Sequential(nn.Linear(32, 64), nn.SiLU(), nn.Linear(64, 64))
            self.inc = nn.Conv2d(4, 16, 3, padding=1)
            self.d1, self.down = Res(16, 16, 64), nn.Conv2d(16, 32, 3, stride=2, padding=1)
            self.mid, self.attn = Res(32, 32, 64), Attn(32)
            self.up = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
            self.u1 = Res(32, 16, 64)
            self.out = nn.Sequential(nn.GroupNorm(4, 16), nn.SiLU(), nn.Conv2d(16, 4, 3, padding=1))

        def forward(self, x, t):
            half = 16
            freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
            e = t[:, None] * freqs[None]
            te = self.temb(torch.cat([torch.sin(e), torch.cos(e)], 1))
            h0 = self.d1(self.inc(x), te)
            h = self.attn(self.mid(self.down(h0), te))
            return self.out(self.u1(torch.cat([self.up(h), h0], 1), te))

    return UNet(), [latent("sample"), timestep("timestep")], ["noise_pred"], \
        "a diffusion U-Net (sinusoidal timestep embedding of t in [0, 999], GroupNorm, SiLU, attention at 8 x 8, transposed conv), widths 16-32"


def build_rrdb_small(torch, attn):
    import torch.nn as nn

    class RDB(nn.Module):
        def __init__(self, c=16, g=8):
            super().__init__()
            self.convs = nn.ModuleList([nn.Conv2d(c + i * g, g if i < 4 else c, 3, padding=1) for i in range(5)])

        def forward(self, x):
            feats = [x]
            for i, conv in enumerate(self.convs):
                y = conv(torch.cat(feats, 1))
                if i < 4:
                    feats.append(nn.functional.leaky_relu(y, 0.2))
            return x + 0.2 * y

    class RRDBNet(nn.Module):
        """ESRGAN's generator at width 16: no normalization, residual scaling 0.2, x2 nearest upsampling."""

        def __init__(self):
            super().__init__()
            self.first = nn.Conv2d(3, 16, 3, padding=1)
            self.body = nn.Sequential(*[nn.Sequential(RDB(), RDB(), RDB()) for _ in range(2)])
            self.trunk = nn.Conv2d(16, 16, 3, padding=1)
            self.up = nn.Conv2d(16, 16, 3, padding=1)
            self.last = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(16, 3, 3, padding=1))

        def forward(self, x):
            f = self.first(x)
            f = f + self.trunk(self.body(f))
            f = nn.functional.leaky_relu(self.up(nn.functional.interpolate(f, scale_factor=2, mode="nearest")), 0.2)
            return self.last(f)

    m = RRDBNet()
    with torch.no_grad():  # ESRGAN initialises its convs at a tenth of Kaiming's scale
        for mod in m.modules():
            if isinstance(mod, nn.Conv2d):
                nn.init.kaiming_normal_(mod.weight)
                mod.weight.mul_(0.1)
    return m, [pixels01("lr", hw=32)], ["sr"], "an ESRGAN-style RRDB generator (dense blocks, no norm, residual scale 0.2, x2), width 16"


def build_vae_decoder(torch, attn):
    import torch.nn as nn

    class Res(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.b = nn.Sequential(nn.GroupNorm(4, c), nn.SiLU(), nn.Conv2d(c, c, 3, padding=1),
                                   nn.GroupNorm(4, c), nn.SiLU(), nn.Conv2d(c, c, 3, padding=1))

        def forward(self, x):
            return x + self.b(x)

    class Dec(nn.Module):
        """A latent-diffusion VAE decoder's shape: 1 / 0.18215 latent scaling, mid attention, nearest x2 steps."""

        def __init__(self):
            super().__init__()
            self.post = nn.Conv2d(4, 4, 1)
            self.inc = nn.Conv2d(4, 32, 3, padding=1)
            self.mid = Res(32)
            self.norm = nn.GroupNorm(4, 32)
            self.qkv = nn.Linear(32, 96)
            self.proj = nn.Linear(32, 32)
            self.ups = nn.ModuleList([nn.Sequential(Res(32), nn.Upsample(scale_factor=2), nn.Conv2d(32, 16, 3, padding=1)),
                                      nn.Sequential(Res(16), nn.Upsample(scale_factor=2), nn.Conv2d(16, 16, 3, padding=1))])
            self.out = nn.Sequential(nn.GroupNorm(4, 16), nn.SiLU(), nn.Conv2d(16, 3, 3, padding=1))

        def forward(self, z):
            h = self.mid(self.inc(self.post(z / 0.18215)))
            b, c, hh, ww = h.shape
            t = self.norm(h).flatten(2).transpose(1, 2)
            q, k, v = self.qkv(t).chunk(3, -1)
            a = torch.softmax(q @ k.transpose(1, 2) / c ** 0.5, -1)
            h = h + self.proj(a @ v).transpose(1, 2).reshape(b, c, hh, ww)
            for u in self.ups:
                h = u(h)
            return self.out(h)

    return Dec(), [latent("latent", hw=8)], ["image"], \
        "a latent-diffusion VAE decoder (1/0.18215 scaling, GroupNorm, mid attention, nearest x2 upsampling), widths 16-32"


def build_pointnet(torch, attn):
    import torch.nn as nn

    class PointNet(nn.Module):
        """PointNet's classifier: shared point MLPs (Conv1d + BatchNorm1d), a learned 3 x 3 transform, max over points."""

        def __init__(self):
            super().__init__()
            self.tnet = nn.Sequential(nn.Conv1d(3, 16, 1), nn.BatchNorm1d(16), nn.ReLU(), nn.Conv1d(16, 32, 1), nn.ReLU())
            self.tfc = nn.Linear(32, 9)
            self.mlp = nn.Sequential(nn.Conv1d(3, 16, 1), nn.BatchNorm1d(16), nn.ReLU(), nn.Conv1d(16, 64, 1),
                                     nn.BatchNorm1d(64), nn.ReLU())
            self.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x):
            t = self.tfc(self.tnet(x).amax(-1)).view(-1, 3, 3) + torch.eye(3)
            x = torch.bmm(t, x)
            return self.head(self.mlp(x).amax(-1))

    return PointNet(), [points("points")], ["logits"], "a PointNet classifier (shared MLPs as Conv1d, a learned input transform, max over points)"


def build_tcn(torch, attn):
    import torch.nn as nn

    class TCN(nn.Module):
        """Dilated causal 1-D convolutions (dilations 1-8, weight-normed), residual, on raw audio frames."""

        def __init__(self):
            super().__init__()
            self.inp = nn.Conv1d(1, 16, 16, stride=8)
            self.blocks = nn.ModuleList([nn.utils.parametrizations.weight_norm(nn.Conv1d(16, 16, 3, dilation=d))
                                         for d in (1, 2, 4, 8)])
            self.out = nn.Linear(16, 10)

        def forward(self, x):
            h = self.inp(x.unsqueeze(1))
            for conv in self.blocks:
                d = conv.dilation[0]
                h = h + torch.relu(conv(nn.functional.pad(h, (2 * d, 0))))
            return self.out(h.mean(-1))

    return TCN(), [audio("input_values", length=4000)], ["logits"], "a dilated causal TCN (weight-normed Conv1d, dilations 1-8, residual), width 16"


def build_resnetv2_bit(torch, attn):
    from functools import partial
    from timm.layers import GroupNormAct
    from timm.models.resnetv2 import ResNetV2
    m = ResNetV2(layers=[1, 1, 1, 1], channels=(16, 32, 64, 128), num_classes=10, width_factor=1,
                 stem_chs=16, preact=True, norm_layer=partial(GroupNormAct, num_groups=8))
    return m, [image("input")], ["logits"], "timm ResNetV2 (BiT: weight-standardized convs, GroupNorm, pre-activation), widths 16-128"


def build_nfnet_small(torch, attn):
    from timm.models.nfnet import NfCfg, NormFreeNet
    cfg = NfCfg(depths=(1, 1, 1, 1), channels=(16, 32, 48, 64), stem_chs=16, bottle_ratio=0.5, group_size=8,
                act_layer="gelu", attn_layer=None, num_features=128)
    m = NormFreeNet(cfg, num_classes=10)
    return m, [image("input")], ["logits"], "timm NormFreeNet (no normalization: scaled weight standardization, alpha/beta gains, skip gains), widths 16-64"


def _detector(m, outs, what):
    """A torchvision detector in eval mode, one fixed 128 x 128 image in [0, 1], its first image's
    detections as the outputs named outs (its dict keys)."""
    def fn(mod, x):
        o = mod(list(x))[0]
        return tuple(o[k] for k in outs)

    spec = pixels01("images", hw=128)
    spec["dims"], spec["dyn"], spec["sample"] = [1, 3, 128, 128], {}, [1, 3, 128, 128]
    return (m, fn), [spec], list(outs), what


def build_ssdlite(torch, attn):
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large
    m = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=5, width_mult=0.25,
                                      detections_per_img=20, topk_candidates=50)
    return _detector(m, ["boxes", "scores"],
                     "torchvision SSDlite320 on mobilenet_v3_large x0.25 (anchors, box decoding, NMS)")


# ---------------------------------------------------------------------------------------------
# Seventh batch: more decoder LLMs (Phi-3's fused projections, StableLM's partial rotary, StarCoder2,
# OLMo's parameter-free LayerNorm), a state-space model (Mamba's selective scan), HuBERT, two more
# seq2seq models (Pegasus, Marian: sinusoidal positions), MobileViTv2's separable attention, a
# time-series transformer (PatchTST: instance normalization of the series), two detectors built
# small (Faster R-CNN: RPN, RoIAlign, NMS; FCOS: GroupNorm heads, NMS), and timm's GhostNet, FastViT
# and CaiT (layer scale 1e-5, talking-heads and class attention).

def series(name, ctx=64, ch=3):
    return dict(name=name, kind="latent", dtype="float32", dims=[2, ctx, ch], dyn={0: "batch"},
                sample=[1, ctx, ch], range=[-4.0, 4.0])


def build_phi3(torch, attn):
    from transformers import Phi3Config, Phi3ForCausalLM
    cfg = _hf_cfg(Phi3Config, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=128, original_max_position_embeddings=128, use_cache=False,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
    m = _hf_model(Phi3ForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers Phi3ForCausalLM (fused qkv and gate_up projections, RMSNorm, rotary), hidden 32")


def build_stablelm(torch, attn):
    from transformers import StableLmConfig, StableLmForCausalLM
    cfg = _hf_cfg(StableLmConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                  max_position_embeddings=128, partial_rotary_factor=0.25, use_qkv_bias=True,
                  use_cache=False)
    m = _hf_model(StableLmForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers StableLmForCausalLM (LayerNorm, partial rotary 0.25, qkv bias), hidden 32")


def build_starcoder2(torch, attn):
    from transformers import Starcoder2Config, Starcoder2ForCausalLM
    cfg = _hf_cfg(Starcoder2Config, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=128, sliding_window=8, use_cache=False)
    m = _hf_model(Starcoder2ForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers Starcoder2ForCausalLM (LayerNorm with bias, GELU MLP, sliding window 8, GQA), hidden 32")


def build_olmo(torch, attn):
    from transformers import OlmoConfig, OlmoForCausalLM
    cfg = _hf_cfg(OlmoConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                  max_position_embeddings=128, clip_qkv=8.0, use_cache=False, pad_token_id=0)
    m = _hf_model(OlmoForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers OlmoForCausalLM (LayerNorm without parameters, qkv clipped to 8), hidden 32")


def build_mamba(torch, attn):
    from transformers import MambaConfig, MambaForCausalLM
    cfg = MambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=8, num_hidden_layers=2, expand=2,
                      conv_kernel=4, use_cache=False, pad_token_id=0)
    m = MambaForCausalLM(cfg)

    def fn(mod, a):
        return mod(input_ids=a, use_cache=False, return_dict=True).logits

    return (m, fn), [ids("input_ids")], ["logits"], \
        "transformers MambaForCausalLM (selective scan, slow path: a loop over the sequence; depthwise causal conv, softplus dt), hidden 32"


def build_hubert(torch, attn):
    from transformers import HubertConfig, HubertModel
    cfg = _hf_cfg(HubertConfig, attn, vocab_size=32, hidden_size=48, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=96, conv_dim=(32,) * 7,
                  conv_stride=(5, 2, 2, 2, 2, 2, 2), conv_kernel=(10, 3, 3, 3, 3, 2, 2),
                  conv_bias=False, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                  feat_extract_norm="layer", do_stable_layer_norm=True, mask_time_prob=0.0)
    m = _hf_model(HubertModel, cfg, attn)
    return _one_input(m, "input_values", audio("input_values"), "last_hidden_state",
                      "transformers HubertModel (LayerNorm conv feature encoder, stable pre-LN), hidden 48")


def build_pegasus(torch, attn):
    from transformers import PegasusConfig, PegasusForConditionalGeneration
    cfg = _hf_cfg(PegasusConfig, attn, vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                  decoder_ffn_dim=64, max_position_embeddings=128, use_cache=False, pad_token_id=0,
                  eos_token_id=1, decoder_start_token_id=0, scale_embedding=True)
    m = _hf_model(PegasusForConditionalGeneration, cfg, attn)
    return *_seq2seq(m), "transformers PegasusForConditionalGeneration (sinusoidal positions, pre-LN, scaled embeddings), d_model 32"


def build_marian(torch, attn):
    from transformers import MarianConfig, MarianMTModel
    cfg = _hf_cfg(MarianConfig, attn, vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                  decoder_ffn_dim=64, max_position_embeddings=128, use_cache=False, pad_token_id=VOCAB - 1,
                  eos_token_id=0, decoder_start_token_id=VOCAB - 1, scale_embedding=True)
    m = _hf_model(MarianMTModel, cfg, attn)
    return *_seq2seq(m), "transformers MarianMTModel (sinusoidal positions, post-LN, swish), d_model 32"


def build_mobilevitv2(torch, attn):
    from transformers import MobileViTV2Config, MobileViTV2ForImageClassification
    cfg = _hf_cfg(MobileViTV2Config, attn, image_size=64, patch_size=2, width_multiplier=0.25, num_labels=10)
    m = _hf_model(MobileViTV2ForImageClassification, cfg, attn)
    return _one_input(m, "pixel_values", pixels01("pixel_values"), "logits",
                      "transformers MobileViTV2ForImageClassification (separable linear self-attention, GroupNorm), width x0.25")


def build_patchtst(torch, attn):
    from transformers import PatchTSTConfig, PatchTSTModel
    cfg = _hf_cfg(PatchTSTConfig, attn, num_input_channels=3, context_length=64, patch_length=8, patch_stride=8,
                  d_model=32, num_attention_heads=4, num_hidden_layers=2, ffn_dim=64, scaling="std",
                  do_mask_input=False)
    m = _hf_model(PatchTSTModel, cfg, attn)
    return _one_input(m, "past_values", series("past_values"), "last_hidden_state",
                      "transformers PatchTSTModel (instance normalization by the series' std, patches, BatchNorm "
                      "encoder), d_model 32")


def _small_fpn_backbone(torch):
    """torchvision's mobilenet_v3 FPN extractor (its last two stages, a max-pooled extra level), at
    width x0.25 and 32 FPN channels instead of 256."""
    from torchvision.models import mobilenet_v3_large
    from torchvision.models.detection.backbone_utils import BackboneWithFPN
    from torchvision.ops.feature_pyramid_network import LastLevelMaxPool
    b = mobilenet_v3_large(weights=None, width_mult=0.25, reduced_tail=True).features
    stages = [0] + [i for i, blk in enumerate(b) if getattr(blk, "_is_cn", False)] + [len(b) - 1]
    returned = [len(stages) - 2, len(stages) - 1]
    return BackboneWithFPN(b, {f"{stages[k]}": str(v) for v, k in enumerate(returned)},
                           [b[stages[i]].out_channels for i in returned], out_channels=32,
                           extra_blocks=LastLevelMaxPool())


def build_fasterrcnn_small(torch, attn):
    from torchvision.models.detection import FasterRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    from torchvision.ops import MultiScaleRoIAlign
    backbone = _small_fpn_backbone(torch)
    anchors = AnchorGenerator(((16, 32, 64),) * 3, ((0.5, 1.0, 2.0),) * 3)
    pool = MultiScaleRoIAlign(["0", "1"], 7, 2)
    m = FasterRCNN(backbone, num_classes=None, rpn_anchor_generator=anchors, box_roi_pool=pool,
                   box_head=TwoMLPHead(backbone.out_channels * 49, 64), box_predictor=FastRCNNPredictor(64, 5),
                   min_size=128, max_size=128, rpn_pre_nms_top_n_test=100, rpn_post_nms_top_n_test=50,
                   box_detections_per_img=20)
    return _detector(m, ["boxes", "scores"],
                     "torchvision FasterRCNN on a mobilenet_v3 x0.25 FPN (RPN, box decoding, NMS, MultiScaleRoIAlign, 2-layer box head)")


def build_fcos_small(torch, attn):
    from torchvision.models.detection import FCOS
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    backbone = _small_fpn_backbone(torch)
    anchors = AnchorGenerator(((32,), (64,), (128,)), ((1.0,),) * 3)
    m = FCOS(backbone, num_classes=5, anchor_generator=anchors, min_size=128, max_size=128,
             score_thresh=0.0, topk_candidates=50, detections_per_img=20)
    return _detector(m, ["boxes", "scores"],
                     "torchvision FCOS on a mobilenet_v3 x0.25 FPN (GroupNorm heads, centerness, NMS)")


def build_ghostnet(torch, attn):
    from timm.models.ghostnet import GhostNet
    cfgs = [[[3, 16, 16, 0, 1]], [[3, 48, 24, 0, 2]], [[3, 72, 24, 0, 1]], [[5, 72, 40, 0.25, 2]],
            [[3, 240, 80, 0, 2]], [[3, 200, 80, 0, 1], [3, 480, 112, 0.25, 1]], [[5, 672, 160, 0.25, 2]]]
    m = GhostNet(cfgs, num_classes=10, width=0.25)
    return _timm_one(m, "timm GhostNet (ghost modules: cheap depthwise features concatenated, hard-sigmoid SE), width 0.25")


def build_fastvit(torch, attn):
    from timm.models.fastvit import FastVit
    m = FastVit(layers=(1, 1, 1, 1), embed_dims=(8, 16, 32, 64), mlp_ratios=(3, 3, 3, 3),
                token_mixers=("repmixer", "repmixer", "repmixer", "attention"), num_classes=10)
    return _timm_one(m, "timm FastViT (RepMixer, structural reparameterisation branches, attention in the last stage), "
                        "dims 8-64")


def build_cait(torch, attn):
    from timm.models.cait import Cait
    m = Cait(img_size=64, patch_size=16, num_classes=10, embed_dim=32, depth=2, num_heads=4, init_values=1e-5,
             depth_token_only=1)
    return _timm_one(m, "timm CaiT (talking-heads attention, class attention, layer scale 1e-5), dim 32")


# ---------------------------------------------------------------------------------------------
# Eighth batch: SAM's windowed ViT encoder (decomposed relative positions), SigLIP's attention-pooling
# head, the Audio Spectrogram Transformer, two video transformers (TimeSformer's divided space-time
# attention, VideoMAE's tubelets), XLNet's two-stream relative attention, FNet's Fourier mixing, RWKV's recurrence (exp of accumulated decays), and
# decoders with ALiBi (MPT), squared ReLU and q/k LayerNorm (Persimmon) and scaled residuals (Granite).

def build_sam_vision(torch, attn):
    from transformers import SamVisionConfig, SamVisionModel
    cfg = _hf_cfg(SamVisionConfig, attn, hidden_size=32, output_channels=16, num_hidden_layers=2,
                  num_attention_heads=4, image_size=64, patch_size=8, mlp_dim=64, window_size=4,
                  global_attn_indexes=[1], use_rel_pos=True, num_pos_feats=8)
    m = _hf_model(SamVisionModel, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values"), "last_hidden_state",
                      "transformers SamVisionModel (windowed and global attention, decomposed relative positions, conv neck "
                      "with LayerNorm2d), hidden 32")


def build_siglip_vision(torch, attn):
    from transformers import SiglipVisionConfig, SiglipVisionModel
    cfg = _hf_cfg(SiglipVisionConfig, attn, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, image_size=64, patch_size=16)
    m = _hf_model(SiglipVisionModel, cfg, attn)
    return _one_input(m, "pixel_values", image("pixel_values", norm=((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                                                rng_range=(-1.0, 1.0)), "pooler_output",
                      "transformers SiglipVisionModel (attention-pooling head: a probe query through nn.MultiheadAttention), "
                      "hidden 32")


def build_ast(torch, attn):
    from transformers import ASTConfig, ASTModel
    cfg = _hf_cfg(ASTConfig, attn, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, patch_size=16, frequency_stride=10, time_stride=10, max_length=64,
                  num_mel_bins=32)
    m = _hf_model(ASTModel, cfg, attn)
    spec = dict(name="input_values", kind="mel", dtype="float32", dims=[2, 64, 32], dyn={0: "batch"},
                sample=[1, 64, 32], range=[-1.0, 1.0])
    return _one_input(m, "input_values", spec, "pooler_output",
                      "transformers ASTModel (overlapping spectrogram patches, two class tokens), hidden 32")


def _video_first(m, out, what, hw=32, frames=4):
    """A video model reading [batch, frames, 3, h, w]: the corpus's video input is [batch, 3, frames, h, w]."""
    def fn(mod, a):
        return getattr(mod(pixel_values=a.permute(0, 2, 1, 3, 4), return_dict=True), out)

    return (m, fn), [video("pixel_values", frames=frames, hw=hw)], [out], what


def build_timesformer(torch, attn):
    from transformers import TimesformerConfig, TimesformerModel
    cfg = _hf_cfg(TimesformerConfig, attn, image_size=32, patch_size=8, num_frames=4, hidden_size=32,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  attention_type="divided_space_time")
    m = _hf_model(TimesformerModel, cfg, attn)
    return _video_first(m, "last_hidden_state", "transformers TimesformerModel (divided space-time attention), hidden 32")


def build_videomae(torch, attn):
    from transformers import VideoMAEConfig, VideoMAEModel
    cfg = _hf_cfg(VideoMAEConfig, attn, image_size=32, patch_size=8, num_frames=4, tubelet_size=2,
                  hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  use_mean_pooling=True)
    m = _hf_model(VideoMAEModel, cfg, attn)
    return _video_first(m, "last_hidden_state", "transformers VideoMAEModel (Conv3d tubelets, fixed sinusoidal table), "
                                                "hidden 32")


def build_xlnet(torch, attn):
    from transformers import XLNetConfig, XLNetModel
    cfg = XLNetConfig(vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, d_inner=64, mem_len=None,
                      use_mems_eval=False)
    m = XLNetModel(cfg)

    def fn(mod, a, b):
        return mod(input_ids=a, attention_mask=b, use_mems=False, return_dict=True).last_hidden_state

    return (m, fn), [ids("input_ids"), mask("attention_mask")], ["last_hidden_state"], \
        "transformers XLNetModel (two-stream relative attention, sinusoidal relative positions, rel_shift), d_model 32"


def build_fnet(torch, attn):
    from transformers import FNetConfig, FNetModel
    cfg = FNetConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                     max_position_embeddings=128, type_vocab_size=2, use_tpu_fourier_optimizations=False)
    m = FNetModel(cfg)

    def fn(mod, a, c):
        return mod(input_ids=a, token_type_ids=c, return_dict=True).last_hidden_state

    return (m, fn), [ids("input_ids"), token_type("token_type_ids")], ["last_hidden_state"], \
        "transformers FNetModel (2-D Fourier transform instead of attention, real part), hidden 32"


def build_rwkv(torch, attn):
    from transformers import RwkvConfig, RwkvForCausalLM
    cfg = RwkvConfig(vocab_size=VOCAB, context_length=64, hidden_size=32, num_hidden_layers=2,
                     attention_hidden_size=32, intermediate_size=64, rescale_every=0, use_cache=False)
    m = RwkvForCausalLM(cfg)

    def fn(mod, a):
        return mod(input_ids=a, use_cache=False, return_dict=True).logits

    return (m, fn), [ids("input_ids")], ["logits"], \
        "transformers RwkvForCausalLM (WKV recurrence over the sequence: exp of time decays with a running max), hidden 32"


def build_mpt(torch, attn):
    from transformers import MptConfig, MptForCausalLM
    cfg = MptConfig(vocab_size=VOCAB, d_model=32, n_heads=4, n_layers=2, expansion_ratio=2, max_seq_len=128,
                    use_cache=False)
    m = MptForCausalLM(cfg)
    return _causal_lm(m, "transformers MptForCausalLM (ALiBi, LayerNorm without bias), d_model 32")


def build_persimmon(torch, attn):
    from transformers import PersimmonConfig, PersimmonForCausalLM
    cfg = _hf_cfg(PersimmonConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=128, qk_layernorm=True,
                  partial_rotary_factor=0.5, hidden_act="relu2", use_cache=False)
    m = _hf_model(PersimmonForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers PersimmonForCausalLM (squared ReLU, q/k LayerNorm, partial rotary), hidden 32")


def build_granite(torch, attn):
    from transformers import GraniteConfig, GraniteForCausalLM
    cfg = _hf_cfg(GraniteConfig, attn, vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  embedding_multiplier=12.0, logits_scaling=8.0, residual_multiplier=0.22,
                  attention_multiplier=0.0078125, use_cache=False)
    m = _hf_model(GraniteForCausalLM, cfg, attn)
    return _causal_lm(m, "transformers GraniteForCausalLM (embedding x12, residual x0.22, logits / 8), hidden 32")


# ---------------------------------------------------------------------------------------------
# Ninth batch: timm's EfficientViT (ReLU linear attention: a division by a sum of products), UperNet
# on ConvNeXt, Depth Anything (DINOv2 backbone,
# DPT head), ESM (rotary protein encoder with token-dropout scaling), CANINE (hashed character
# embeddings, strided downsampling), Switch Transformers (top-1 expert routing), LongT5 (local
# attention), and torchvision's RetinaNet and Mask R-CNN built small.

def build_efficientvit(torch, attn):
    from timm.models.efficientvit_mit import EfficientVit
    m = EfficientVit(widths=(8, 16, 32, 64, 128), depths=(1, 1, 1, 1, 1), head_dim=16, head_widths=(256, 320),
                     num_classes=10)
    return _timm_one(m, "timm EfficientVit (MIT: ReLU linear attention, a division by the sum of the products), widths 8-128")


def build_upernet(torch, attn):
    from transformers import ConvNextConfig, UperNetConfig, UperNetForSemanticSegmentation
    bb = ConvNextConfig(num_channels=3, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                        out_features=["stage1", "stage2", "stage3", "stage4"])
    cfg = UperNetConfig(backbone_config=bb, hidden_size=32, auxiliary_in_channels=32, num_labels=5,
                        use_auxiliary_head=False, pool_scales=[1, 2, 3, 6])
    m = UperNetForSemanticSegmentation(cfg)
    return _one_input(m, "pixel_values", image("pixel_values"), "logits",
                      "transformers UperNetForSemanticSegmentation on ConvNeXt (pyramid pooling, FPN fusion), dims 8-64")


def build_depth_anything(torch, attn):
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config
    bb = Dinov2Config(image_size=56, patch_size=14, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                      mlp_ratio=2, out_features=["stage1", "stage2", "stage3", "stage4"], reshape_hidden_states=False)
    cfg = DepthAnythingConfig(backbone_config=bb, reassemble_hidden_size=32, patch_size=14,
                              neck_hidden_sizes=[8, 16, 32, 32], fusion_hidden_size=16, head_hidden_size=8)
    m = DepthAnythingForDepthEstimation(cfg)
    return _one_input(m, "pixel_values", image("pixel_values", hw=56), "predicted_depth",
                      "transformers DepthAnythingForDepthEstimation (DINOv2 backbone, DPT neck and head), 56 x 56")


def build_esm(torch, attn):
    from transformers import EsmConfig, EsmModel
    cfg = _hf_cfg(EsmConfig, attn, vocab_size=33, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, max_position_embeddings=128, position_embedding_type="rotary",
                  token_dropout=True, mask_token_id=32, pad_token_id=1)
    m = _hf_model(EsmModel, cfg, attn)

    def fn(mod, a, b):
        return mod(input_ids=a, attention_mask=b, return_dict=True).last_hidden_state

    return (m, fn), [ids("input_ids", vocab=33), mask("attention_mask")], ["last_hidden_state"], \
        "transformers EsmModel (rotary, token-dropout rescaling by the mask ratio), hidden 32"


def build_canine(torch, attn):
    from transformers import CanineConfig, CanineModel
    cfg = CanineConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                       max_position_embeddings=256, downsampling_rate=4, num_hash_functions=4, num_hash_buckets=256,
                       local_transformer_stride=8)
    m = CanineModel(cfg)
    spec_ids, spec_mask = ids("input_ids", seq=32, vocab=1024), mask("attention_mask", seq=32)

    def fn(mod, a, b):
        return mod(input_ids=a, attention_mask=b, return_dict=True).last_hidden_state

    return (m, fn), [spec_ids, spec_mask], ["last_hidden_state"], \
        "transformers CanineModel (hashed character embeddings, strided downsampling and upsampling), hidden 32"


def build_switch_transformers(torch, attn):
    from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration
    cfg = SwitchTransformersConfig(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, expert_capacity=8, num_layers=2,
                                   num_sparse_encoder_layers=1, num_decoder_layers=2, num_sparse_decoder_layers=1,
                                   num_heads=4, num_experts=4, decoder_start_token_id=0, pad_token_id=0,
                                   eos_token_id=1, use_cache=False)
    m = SwitchTransformersForConditionalGeneration(cfg)
    return *_seq2seq(m), "transformers SwitchTransformersForConditionalGeneration (top-1 routing over 4 experts), d_model 32"


def build_longt5(torch, attn):
    from transformers import LongT5Config, LongT5ForConditionalGeneration
    cfg = LongT5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                       local_radius=4, global_block_size=4, encoder_attention_type="transient-global",
                       decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, use_cache=False)
    m = LongT5ForConditionalGeneration(cfg)
    return *_seq2seq(m), "transformers LongT5ForConditionalGeneration (transient-global local attention, radius 4), d_model 32"


def build_retinanet_small(torch, attn):
    from torchvision.models.detection import RetinaNet
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    backbone = _small_fpn_backbone(torch)
    anchors = AnchorGenerator(((16, 32),) * 3, ((0.5, 1.0, 2.0),) * 3)
    m = RetinaNet(backbone, num_classes=5, anchor_generator=anchors, min_size=128, max_size=128,
                  score_thresh=0.0, topk_candidates=50, detections_per_img=20)
    return _detector(m, ["boxes", "scores"],
                     "torchvision RetinaNet on a mobilenet_v3 x0.25 FPN (focal-loss heads, per-level top-k, NMS)")


def build_maskrcnn_small(torch, attn):
    from torchvision.models.detection import MaskRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
    from torchvision.ops import MultiScaleRoIAlign
    backbone = _small_fpn_backbone(torch)
    anchors = AnchorGenerator(((16, 32, 64),) * 3, ((0.5, 1.0, 2.0),) * 3)
    m = MaskRCNN(backbone, num_classes=None, rpn_anchor_generator=anchors,
                 box_roi_pool=MultiScaleRoIAlign(["0", "1"], 7, 2),
                 box_head=TwoMLPHead(backbone.out_channels * 49, 64), box_predictor=FastRCNNPredictor(64, 5),
                 mask_roi_pool=MultiScaleRoIAlign(["0", "1"], 14, 2),
                 mask_head=MaskRCNNHeads(backbone.out_channels, [16, 16], 1),
                 mask_predictor=MaskRCNNPredictor(16, 16, 5), min_size=128, max_size=128,
                 rpn_pre_nms_top_n_test=100, rpn_post_nms_top_n_test=50, box_detections_per_img=10)
    return _detector(m, ["boxes", "scores", "masks"],
                     "torchvision MaskRCNN on a mobilenet_v3 x0.25 FPN (RoIAlign for boxes and masks, ConvTranspose mask head, mask pasting)")


FAMILIES = {
    "resnet50": (build_resnet50, False),
    "mobilenetv3": (build_mobilenetv3, False),
    "efficientnet_b0": (build_efficientnet_b0, False),
    "convnext_t": (build_convnext_t, False),
    "regnet": (build_regnet, False),
    "vit_b16": (build_vit_b16, False),
    "swin_t": (build_swin_t, False),
    "deeplabv3": (build_deeplabv3, False),
    "bert": (build_bert, True),
    "gpt2": (build_gpt2, True),
    "t5_small": (build_t5_small, True),
    "llama": (build_llama, True),
    "whisper_encoder": (build_whisper_encoder, True),
    "wav2vec2": (build_wav2vec2, True),
    "segformer": (build_segformer, True),
    "clip_vit": (build_clip_vit, True),
    "detr": (build_detr, True),
    "rt_detr": (build_rt_detr, True),
}
ISSUE_FAMILIES = tuple(FAMILIES)  # the 18 the real-exports issue measured
MORE_FAMILIES = {
    "deberta_v2": (build_deberta_v2, True),
    "distilbert": (build_distilbert, True),
    "bart": (build_bart, True),
    "gpt_neox": (build_gpt_neox, True),
    "bloom": (build_bloom, True),
    "gemma": (build_gemma, True),
    "qwen2": (build_qwen2, True),
    "swinv2": (build_swinv2, True),
    "beit": (build_beit, True),
    "dinov2": (build_dinov2, True),
    "mobilevit": (build_mobilevit, True),
    "convnextv2": (build_convnextv2, True),
    "wav2vec2_conformer": (build_wav2vec2_conformer, True),
    "maxvit": (build_maxvit, False),
    "raft_small": (build_raft_small, False),
    "shufflenet_v2": (build_shufflenet_v2, False),
    "densenet": (build_densenet, False),
}
FAMILIES.update(MORE_FAMILIES)
EXTRA_FAMILIES = {
    "roberta": (build_roberta, True),
    "albert": (build_albert, True),
    "electra": (build_electra, True),
    "mpnet": (build_mpnet, True),
    "opt": (build_opt, True),
    "gptj": (build_gptj, True),
    "phi": (build_phi, True),
    "mistral": (build_mistral, True),
    "yolos": (build_yolos, True),
    "vgg11_bn": (build_vgg11_bn, False),
    "squeezenet": (build_squeezenet, False),
    "mnasnet": (build_mnasnet, False),
}
FAMILIES.update(EXTRA_FAMILIES)
FOURTH_FAMILIES = {
    "gemma2": (build_gemma2, True),
    "mixtral": (build_mixtral, True),
    "gpt_bigcode": (build_gpt_bigcode, True),
    "falcon": (build_falcon, True),
    "mobilebert": (build_mobilebert, True),
    "squeezebert": (build_squeezebert, True),
    "swin2sr": (build_swin2sr, True),
    "dpt": (build_dpt, True),
    "c3d_small": (build_c3d_small, False),
    "lraspp": (build_lraspp, False),
    "lstm_tagger": (build_lstm_tagger, False),
    "gru_audio": (build_gru_audio, False),
    "levit": (build_levit, True),
}
FAMILIES.update(FOURTH_FAMILIES)
FIFTH_FAMILIES = {
    "mlp_mixer": (build_mlp_mixer, False),
    "xcit": (build_xcit, False),
    "eva": (build_eva, False),
    "convmixer": (build_convmixer, False),
    "edgenext": (build_edgenext, False),
    "encodec": (build_encodec, True),
    "funnel": (build_funnel, True),
    "convbert": (build_convbert, True),
    "poolformer": (build_poolformer, True),
    "mobilenet_v2": (build_mobilenet_v2, False),
    "qwen3": (build_qwen3, True),
    "cohere": (build_cohere, True),
}
FAMILIES.update(FIFTH_FAMILIES)
SIXTH_FAMILIES = {
    "yolo_small": (build_yolo_small, False),
    "unet_small": (build_unet_small, False),
    "rrdb_small": (build_rrdb_small, False),
    "vae_decoder": (build_vae_decoder, False),
    "pointnet": (build_pointnet, False),
    "tcn": (build_tcn, False),
    "resnetv2_bit": (build_resnetv2_bit, False),
    "nfnet_small": (build_nfnet_small, False),
    "ssdlite": (build_ssdlite, False),
}
FAMILIES.update(SIXTH_FAMILIES)
SEVENTH_FAMILIES = {
    "phi3": (build_phi3, True),
    "stablelm": (build_stablelm, True),
    "starcoder2": (build_starcoder2, True),
    "olmo": (build_olmo, True),
    "mamba": (build_mamba, False),
    "hubert": (build_hubert, True),
    "pegasus": (build_pegasus, True),
    "marian": (build_marian, True),
    "mobilevitv2": (build_mobilevitv2, True),
    "patchtst": (build_patchtst, True),
    "fasterrcnn_small": (build_fasterrcnn_small, False),
    "fcos_small": (build_fcos_small, False),
    "ghostnet": (build_ghostnet, False),
    "fastvit": (build_fastvit, False),
    "cait": (build_cait, False),
}
FAMILIES.update(SEVENTH_FAMILIES)
EIGHTH_FAMILIES = {
    "sam_vision": (build_sam_vision, True),
    "siglip_vision": (build_siglip_vision, True),
    "ast": (build_ast, True),
    "timesformer": (build_timesformer, True),
    "videomae": (build_videomae, True),
    "xlnet": (build_xlnet, False),
    "fnet": (build_fnet, False),
    "rwkv": (build_rwkv, False),
    "mpt": (build_mpt, False),
    "persimmon": (build_persimmon, True),
    "granite": (build_granite, True),
}
FAMILIES.update(EIGHTH_FAMILIES)
NINTH_FAMILIES = {
    "efficientvit": (build_efficientvit, False),
    "upernet": (build_upernet, False),
    "depth_anything": (build_depth_anything, False),
    "esm": (build_esm, True),
    "canine": (build_canine, False),
    "switch_transformers": (build_switch_transformers, False),
    "longt5": (build_longt5, False),
    "retinanet_small": (build_retinanet_small, False),
    "maskrcnn_small": (build_maskrcnn_small, False),
}
FAMILIES.update(NINTH_FAMILIES)


# ---------------------------------------------------------------------------------------------
# Tenth batch: timm's small image models by registered name (timm.create_model, random init, 10
# classes, 224 x 224): hard-swish and mixed-kernel depthwise nets, structural reparameterisation,
# spatial-reduction, gated-positional, pooling-based and factorized attention, the star operation
# (a product of two branches), gated CNNs, scaled weight standardization without normalization,
# distillation tokens.

TIMM_TENTH = {
    "lcnet_050": "timm PP-LCNet 0.5 (depthwise separable, hard-swish, SE in the last blocks)",
    "tinynet_e": "timm TinyNet-E (a shrunk EfficientNet: MBConv, SE, SiLU)",
    "mobileone_s0": "timm MobileOne-S0 (reparameterisable multi-branch blocks, as trained: branches unfused)",
    "repghostnet_050": "timm RepGhostNet 0.5 (ghost features by reparameterisable re-use)",
    "mixnet_s": "timm MixNet-S (mixed depthwise kernels 3-9 in one layer, SE, Swish)",
    "efficientformerv2_s0": "timm EfficientFormerV2-S0 (4-D attention with talking heads, local/global blocks)",
    "pvt_v2_b0": "timm PVTv2-B0 (spatial-reduction attention, overlapping patch embedding, DWConv FFN)",
    "starnet_s050": "timm StarNet-S050 (the star operation: the product of two linear branches)",
    "mambaout_femto": "timm MambaOut-Femto (gated CNN blocks without the SSM)",
    "hgnetv2_b0": "timm HGNetV2-B0 (light conv blocks, learnable affine scales, ESE)",
    "ese_vovnet19b_slim_dw": "timm VoVNet-19 slim DW (one-shot aggregation, effective SE)",
    "convit_tiny": "timm ConViT-Tiny (gated positional self-attention)",
    "pit_ti_224": "timm PiT-Ti (pooling-based ViT: depthwise-conv token pooling)",
    "coat_lite_tiny": "timm CoaT-Lite Tiny (factorized attention with convolutional relative positions)",
    "mobilenetv4_conv_small_050": "timm MobileNetV4 conv-small 0.5 (universal inverted bottlenecks)",
    "rexnet_100": "timm ReXNet 1.0 (rank-expanded channels, SiLU/ReLU6, SE)",
    "nf_regnet_b0": "timm NF-RegNet-B0 (no normalization: scaled weight standardization, skip gains)",
    "ghostnetv2_100": "timm GhostNetV2 1.0 (DFC attention: decoupled fully connected, sigmoid gate)",
    "deit_tiny_distilled_patch16_224": "timm DeiT-Ti distilled (class and distillation tokens, two heads averaged)",
    "inception_next_atto": "timm InceptionNeXt-Atto (inception depthwise convs: square, band kernels and identity)",
}


def _timm_create(torch, name):
    import timm
    m = timm.create_model(name, pretrained=False, num_classes=10)
    # a head timm zero-initialises gives every logit 0 whatever the input: draw it, as a trained one is
    for mod in m.modules():
        if isinstance(mod, torch.nn.Linear) and not bool(mod.weight.detach().abs().sum()):
            torch.nn.init.trunc_normal_(mod.weight, std=0.2)
    return m


def _timm_builder(name):
    def build(torch, attn):
        return _timm_one(_timm_create(torch, name), TIMM_TENTH[name], image("input", hw=224))
    return build


TENTH_FAMILIES = {name: (_timm_builder(name), False) for name in TIMM_TENTH}
FAMILIES.update(TENTH_FAMILIES)


def family_index(family):
    """A stable number per family for seeds: the issue's 18 keep the indices they were exported with,
    and each later batch its own."""
    if family in ISSUE_FAMILIES:
        return sorted(ISSUE_FAMILIES).index(family)
    if family in MORE_FAMILIES:
        return 100 + sorted(MORE_FAMILIES).index(family)
    if family in FOURTH_FAMILIES:
        return 300 + sorted(FOURTH_FAMILIES).index(family)
    if family in FIFTH_FAMILIES:
        return 400 + sorted(FIFTH_FAMILIES).index(family)
    if family in SIXTH_FAMILIES:
        return 500 + sorted(SIXTH_FAMILIES).index(family)
    if family in SEVENTH_FAMILIES:
        return 600 + sorted(SEVENTH_FAMILIES).index(family)
    if family in EIGHTH_FAMILIES:
        return 700 + sorted(EIGHTH_FAMILIES).index(family)
    if family in NINTH_FAMILIES:
        return 800 + sorted(NINTH_FAMILIES).index(family)
    if family in TENTH_FAMILIES:
        return 900 + sorted(TENTH_FAMILIES).index(family)
    # googlenet was in this batch (22 MB per export, over what one tarball brings back): it stays in
    # the order so that the others keep the seeds they were exported with
    return 200 + sorted(list(EXTRA_FAMILIES) + ["googlenet"]).index(family)


# ---------------------------------------------------------------------------------------------
# Samples

def make_sample(spec, shape, rng, np):
    kind = spec["kind"]
    if kind == "image":
        mean, std = spec["norm"]
        x = rng.uniform(0.0, 1.0, shape).astype(np.float32)
        # smooth-ish images: average with a shifted copy, as real pictures are not white noise
        x = 0.5 * (x + np.roll(x, 1, axis=-1))
        mean = np.array(mean, np.float32).reshape(1, 3, 1, 1)
        std = np.array(std, np.float32).reshape(1, 3, 1, 1)
        return ((x - mean) / std).astype(np.float32)
    if kind == "video":  # frames of one smooth picture drifting by a pixel each
        mean, std = spec["norm"]
        x = rng.uniform(0.0, 1.0, shape[:2] + shape[3:]).astype(np.float32)
        x = 0.5 * (x + np.roll(x, 1, axis=-1))
        x = np.stack([np.roll(x, t, axis=-1) for t in range(shape[2])], axis=2)
        mean = np.array(mean, np.float32).reshape(1, 3, 1, 1, 1)
        std = np.array(std, np.float32).reshape(1, 3, 1, 1, 1)
        return ((x - mean) / std).astype(np.float32)
    if kind == "latent":  # a VAE latent: smooth, about N(0, 1)
        x = rng.standard_normal(shape).astype(np.float32)
        return np.clip(0.5 * (x + np.roll(x, 1, axis=-1)), -4, 4).astype(np.float32)
    if kind == "timestep":
        return rng.integers(0, 1000, shape).astype(np.float32)
    if kind == "points":  # a point cloud on a noisy sphere
        x = rng.standard_normal(shape)
        x = x / np.linalg.norm(x, axis=1, keepdims=True) * rng.uniform(0.8, 1.0, (shape[0], 1, shape[2]))
        return np.clip(x, -1, 1).astype(np.float32)
    if kind == "pixels01":
        x = rng.uniform(0.0, 1.0, shape).astype(np.float32)
        return (0.5 * (x + np.roll(x, 1, axis=-1))).astype(np.float32)
    if kind == "ids":
        return rng.integers(spec["range"][0], spec["range"][1] + 1, shape).astype(np.int64)
    if kind == "mask":
        m = np.ones(shape, np.int64)
        b, t = shape
        for r in range(1, b):  # the first row is full, the others padded at the end
            m[r, t - int(rng.integers(1, max(2, t // 2))):] = 0
        if b == 1 and t > 2:
            m[0, -1] = 0
        return m
    if kind == "token_type":
        m = np.zeros(shape, np.int64)
        m[:, shape[1] // 2:] = 1
        return m
    if kind == "audio":
        n = shape[-1]
        t = np.arange(n) / 16000.0
        f = rng.uniform(100, 1000, (shape[0], 3))
        x = sum(0.25 * np.sin(2 * np.pi * f[:, k:k + 1] * t) for k in range(3))
        x = x + 0.05 * rng.standard_normal(shape)
        return np.clip(x, -1, 1).astype(np.float32)
    if kind == "mel":
        x = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        return (0.5 * (x + np.roll(x, 1, axis=-1))).astype(np.float32)
    raise ValueError(kind)


# ---------------------------------------------------------------------------------------------
# One (family, exporter) in a worker process

def make_wrapper(torch, model, fn):
    import torch.nn as nn
    n = fn.__code__.co_argcount - 1

    class W1(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, a):
            return fn(self.m, a)

    class W2(W1):
        def forward(self, a, b):
            return fn(self.m, a, b)

    class W3(W1):
        def forward(self, a, b, c):
            return fn(self.m, a, b, c)

    return {1: W1, 2: W2, 3: W3}[n]()


def build(family, attn, torch):
    builder, _ = FAMILIES[family]
    torch.manual_seed(1234 + family_index(family))
    m, specs, outs, notes = builder(torch, attn)
    if isinstance(m, tuple):
        model, fn = m
        hf = model
        m = make_wrapper(torch, model, fn)
    else:
        hf = None
    nbn = _randomize_norm_stats(m, torch, 99)
    m.eval()
    attn_used = _attn_of(hf) if hf is not None else None
    return m, specs, outs, notes, nbn, attn_used


def onnx_dims(vi):
    t = vi.type.tensor_type
    return [d.dim_param if d.HasField("dim_param") else (d.dim_value if d.HasField("dim_value") else "?")
            for d in t.shape.dim]


def rel_l2(a, b, np):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        return None
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    nb = np.linalg.norm(b)
    d = np.linalg.norm(a - b)
    return float(d / nb) if nb > 0 else float(d)


def export_one(family, exporter, d, torch, attn, dyn_mode, no_grad=True):
    import numpy as np
    m, specs, outs, notes, nbn, attn_used = build(family, attn, torch)
    names = [s["name"] for s in specs]
    rng = np.random.default_rng(7)
    example = tuple(torch.from_numpy(make_sample(s, s["dims"], rng, np)) for s in specs)
    path = os.path.join(d, "model.onnx")
    for f in os.listdir(d):
        if os.path.isfile(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    import contextlib
    with torch.no_grad() if no_grad else contextlib.nullcontext():
        if exporter == "torchscript":
            axes = {s["name"]: dict(s["dyn"]) for s in specs}
            for o in outs:
                axes[o] = {0: "batch"}
            torch.onnx.export(m, example, path, dynamo=False, opset_version=17, input_names=names,
                              output_names=outs, dynamic_axes=axes, do_constant_folding=True)
        else:
            from torch.export import Dim
            kind = getattr(Dim, dyn_mode)
            shapes = tuple({ax: kind for ax in s["dyn"]} for s in specs)
            torch.onnx.export(m, example, path, dynamo=True, input_names=names, output_names=outs,
                              dynamic_shapes=shapes, external_data=False)
    return m, specs, outs, notes, nbn, attn_used, path


def worker(family, exporter, root):
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    torch.set_num_threads(2)
    d = os.path.join(root, family, exporter)
    os.makedirs(d, exist_ok=True)
    entry = dict(family=family, exporter=exporter, path=f"{family}/{exporter}/model.onnx")
    t0 = time.monotonic()
    hf = FAMILIES[family][1]
    attempts = []
    # First as inference scripts export (under torch.no_grad()); then with autograd on, which keeps
    # nn.MultiheadAttention off its fused fast path; then, for transformers models, eager attention.
    if exporter == "torchscript":
        attempts = [(None, None, True), (None, None, False)] + ([("eager", None, True)] if hf else [])
    else:
        attempts = [(None, "DYNAMIC", True), (None, "AUTO", True)] + \
            ([("eager", "DYNAMIC", True)] if hf else [])
    errors = []
    res = None
    for attn, dyn, no_grad in attempts:
        try:
            res = export_one(family, exporter, d, torch, attn, dyn, no_grad)
            if dyn:
                entry["dynamic_shapes"] = f"Dim.{dyn}"
            entry["exported_under_no_grad"] = no_grad
            break
        except Exception as e:
            tb = traceback.format_exc()
            errors.append(dict(attn_implementation=attn or "default", dynamic=dyn, no_grad=no_grad,
                               error=f"{type(e).__name__}: {e}"[:4000], traceback=tb[-6000:]))
            print(f"[{family}/{exporter}] attempt attn={attn or 'default'} dyn={dyn} "
                  f"no_grad={no_grad} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
    if errors:
        entry["failed_attempts"] = errors
    if res is None:
        entry["error"] = errors[-1]["error"] if errors else "no attempt"
        entry["export_seconds"] = round(time.monotonic() - t0, 2)
        return entry
    m, specs, outs, notes, nbn, attn_used, path = res
    entry["export_seconds"] = round(time.monotonic() - t0, 2)
    entry["notes"] = notes
    entry["attn_implementation"] = attn_used
    entry["batchnorms_randomized"] = nbn
    entry["params"] = int(sum(p.numel() for p in m.parameters()))

    # Inline the weights (no external data), whatever the exporter did.
    model = onnx.load(path)
    for f in os.listdir(d):
        if f != "model.onnx" and os.path.isfile(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    onnx.save_model(model, path)
    entry["size"] = os.path.getsize(path)
    entry["opset"] = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    entry["opset_imports"] = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    entry["ir_version"] = model.ir_version
    entry["producer"] = f"{model.producer_name} {model.producer_version}".strip()
    inits = {t.name for t in model.graph.initializer}
    ginputs = [i for i in model.graph.input if i.name not in inits]
    by_name = {s["name"]: s for s in specs}
    inputs = []
    for k, gi in enumerate(ginputs):
        s = by_name.get(gi.name) or (specs[k] if k < len(specs) else None)
        if s is None:
            raise RuntimeError(f"graph input {gi.name!r} matches no input spec")
        dims = onnx_dims(gi)
        shape = [s["sample"][j] if not isinstance(dims[j], int) else dims[j] for j in range(len(dims))]
        inputs.append(dict(name=gi.name, dtype=s["dtype"], kind=s["kind"],
                           elem_type=onnx.TensorProto.DataType.Name(gi.type.tensor_type.elem_type),
                           onnx_shape=dims, export_shape=s["dims"], shape=shape, range=s["range"],
                           spec=s["name"]))
    entry["inputs"] = inputs
    entry["outputs"] = [dict(name=o.name, onnx_shape=onnx_dims(o)) for o in model.graph.output]
    entry["ranges"] = [f"{i['name']}={i['range'][0]}:{i['range'][1]}" for i in inputs]
    if family in ("detr", "rt_detr"):  # a set of queries along axis 1, in no meaningful order
        entry["set_outputs"] = list(outs)
    dropped = [s["name"] for s in specs if s["name"] not in {i["spec"] for i in inputs}]
    if dropped:
        entry["inputs_dropped_by_exporter"] = dropped

    # Samples: the same values for both exporters (seeded by family and sample).
    import onnxruntime as ort
    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise RuntimeError(f"exported (opset {entry['opset']}), but onnxruntime cannot load it: "
                           f"{type(e).__name__}: {e}") from e
    seed0 = family_index(family) * 100
    specs_by = {i["spec"]: i for i in inputs}
    for si, sub in enumerate(["calib/0", "calib/1", "verify/0"]):
        sd = os.path.join(d, sub)
        os.makedirs(sd, exist_ok=True)
        rng = np.random.default_rng(seed0 + si)
        arrays = {}
        for s in specs:  # draw every spec's sample so the stream does not depend on dropped inputs
            shape = specs_by[s["name"]]["shape"] if s["name"] in specs_by else s["sample"]
            arrays[s["name"]] = make_sample(s, shape, rng, np)
        for k, inp in enumerate(inputs):
            a = arrays[inp["spec"]]
            p = os.path.join(sd, f"input_{k}.pb")
            if os.path.lexists(p):  # may be a hard link into another model's folder (dedupe)
                os.remove(p)
            with open(p, "wb") as f:
                f.write(numpy_helper.from_array(a, inp["name"]).SerializeToString())
        if sub == "verify/0":
            feeds = {inp["name"]: arrays[inp["spec"]] for inp in inputs}
            try:
                got = sess.run(None, feeds)
            except Exception as e:
                raise RuntimeError(f"exported (opset {entry['opset']}), but onnxruntime cannot run it: "
                                   f"{type(e).__name__}: {e}") from e
            for k, (o, a) in enumerate(zip(model.graph.output, got)):
                p = os.path.join(sd, f"output_{k}.pb")
                if os.path.lexists(p):
                    os.remove(p)
                with open(p, "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(a), o.name).SerializeToString())
            with torch.no_grad():
                ref = m(*[torch.from_numpy(arrays[s["name"]]) for s in specs])
            if not isinstance(ref, (tuple, list)):
                ref = (ref,)
            entry["ort_vs_torch_rel_l2"] = [rel_l2(g, r.numpy(), np) for g, r in zip(got, ref)]
            diag = []
            for g, r in zip(got, ref):
                g = np.asarray(g, np.float64)
                r = r.detach().numpy().astype(np.float64)
                if g.shape != r.shape:
                    diag.append(dict(shape_ort=list(g.shape), shape_torch=list(r.shape)))
                    continue
                dd = np.abs(g - r)
                bad = np.argwhere(dd > 1e-3 * (1 + np.abs(r)))
                diag.append(dict(max_abs=float(np.nanmax(dd)) if dd.size else 0.0,
                                 mismatched=int(len(bad)), count=int(dd.size),
                                 first=[[int(v) for v in b] for b in bad[:8]],
                                 first_values=[[float(g[tuple(b)]), float(r[tuple(b)])] for b in bad[:8]]))
            entry["ort_vs_torch"] = diag
            entry["output_shapes"] = [list(np.asarray(a).shape) for a in got]
    entry["seconds"] = round(time.monotonic() - t0, 2)
    return entry


def probe(family):
    """Build the family and run it once in PyTorch: a quick check of the configs."""
    import numpy as np
    import torch
    torch.set_num_threads(2)
    t0 = time.monotonic()
    m, specs, outs, notes, nbn, attn_used = build(family, None, torch)
    rng = np.random.default_rng(7)
    x = tuple(torch.from_numpy(make_sample(s, s["dims"], rng, np)) for s in specs)
    with torch.no_grad():
        y = m(*x)
    y = y if isinstance(y, (tuple, list)) else (y,)
    n = sum(p.numel() for p in m.parameters())
    return dict(family=family, params=int(n), approx_kb=round(n * 4 / 1024), attn=attn_used,
                outputs=[list(t.shape) for t in y], absmax=[float(t.abs().max()) for t in y],
                notes=notes, batchnorms=nbn, seconds=round(time.monotonic() - t0, 2))


# ---------------------------------------------------------------------------------------------
# Driver

def versions():
    v = {"python": sys.version.split()[0]}
    for name in ("torch", "torchvision", "transformers", "timm", "onnx", "onnxruntime", "onnxscript",
                 "numpy"):
        try:
            v[name] = __import__(name).__version__
        except Exception as e:
            v[name] = f"unavailable ({type(e).__name__})"
    return v


def run_jobs(jobs, root, ncpu, timeout, log):
    """jobs: list of (family, exporter). Runs each in its own process, ncpu at a time."""
    pending = list(jobs)
    running = {}
    results = []
    while pending or running:
        while pending and len(running) < ncpu:
            fam, exp = pending.pop(0)
            out = os.path.join(root, f".{fam}.{exp}.json")
            logf = open(os.path.join(root, f".{fam}.{exp}.log"), "w")
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", fam, exp,
                                  "--root", root, "--result", out], stdout=logf,
                                 stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
            running[p] = (fam, exp, out, logf, time.monotonic())
        time.sleep(0.2)
        for p in list(running):
            fam, exp, out, logf, t0 = running[p]
            rc = p.poll()
            if rc is None and time.monotonic() - t0 < timeout:
                continue
            if rc is None:
                p.kill()
                p.wait()
                rc = "timeout"
            logf.close()
            del running[p]
            text = open(logf.name, errors="replace").read()
            if os.path.exists(out):
                entry = json.load(open(out))
            else:
                entry = dict(family=fam, exporter=exp,
                             error=f"worker exited {rc} after {time.monotonic() - t0:.0f} s: "
                                   + text.strip()[-3000:])
            entry["worker_seconds"] = round(time.monotonic() - t0, 1)
            msg = (f"{fam:16} {exp:11} {entry['worker_seconds']:6.1f} s  " +
                   (f"opset {entry.get('opset')} {entry.get('size', 0) / 1024:.0f} KB "
                    f"ort-vs-torch {entry.get('ort_vs_torch_rel_l2')}"
                    if "error" not in entry else "FAILED: " + entry["error"][:400].replace("\n", " ")))
            print(msg, flush=True)
            log.write(msg + "\n")
            log.write(text + "\n")
            results.append(entry)
    return results


def dedupe(root):
    """Hard-link identical sample files so the tarball holds each once."""
    seen = {}
    saved = 0
    for dp, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            if not f.endswith(".pb"):
                continue
            p = os.path.join(dp, f)
            h = hashlib.sha256(open(p, "rb").read()).hexdigest()
            if h in seen:
                saved += os.path.getsize(p)
                os.remove(p)
                os.link(seen[h], p)
            else:
                seen[h] = p
    return saved


def pack(root, out_dir, name="halfguard-exports"):
    """One tarball of root's contents; split by family only if it would pass TAR_LIMIT."""
    fams = sorted(x for x in os.listdir(root) if os.path.isdir(os.path.join(root, x)))
    top = sorted(x for x in os.listdir(root) if os.path.isfile(os.path.join(root, x))
                 and not x.startswith("."))

    def make(path, members):
        with tarfile.open(path, "w:gz", compresslevel=9) as tar:
            for x in top:
                tar.add(os.path.join(root, x), arcname=x)
            for fam in members:
                tar.add(os.path.join(root, fam), arcname=fam,
                        filter=lambda ti: None if os.path.basename(ti.name).startswith(".") else ti)
        return os.path.getsize(path)

    one = os.path.join(out_dir, name + ".tar.gz")
    if make(one, fams) <= TAR_LIMIT:
        return [one]
    os.remove(one)
    parts, cur, k = [], [], 1
    for fam in fams:  # greedy: add families until a part passes the limit
        trial = os.path.join(out_dir, f"{name}-{k}.tar.gz")
        if cur and make(trial, cur + [fam]) > TAR_LIMIT:
            make(trial, cur)
            parts.append(trial)
            k += 1
            cur = []
        cur.append(fam)
    if cur:
        trial = os.path.join(out_dir, f"{name}-{k}.tar.gz")
        make(trial, cur)
        parts.append(trial)
    return parts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(HERE, "out")),
                    help="where the tarball goes (default $OUT)")
    ap.add_argument("--work", default="/tmp/hg-exports", help="working folder")
    ap.add_argument("--only", default="", help="comma-separated families")
    ap.add_argument("--exporters", default=",".join(EXPORTERS))
    ap.add_argument("--jobs", type=int, default=min(12, os.cpu_count() or 2))
    ap.add_argument("--timeout", type=float, default=240, help="seconds per (family, exporter)")
    ap.add_argument("--probe", action="store_true", help="build and run each family; export nothing")
    ap.add_argument("--no-pack", action="store_true")
    ap.add_argument("--worker", nargs=2, metavar=("FAMILY", "EXPORTER"), help=argparse.SUPPRESS)
    ap.add_argument("--probe-one", metavar="FAMILY", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        try:
            entry = worker(args.worker[0], args.worker[1], args.root)
        except Exception as e:
            entry = dict(family=args.worker[0], exporter=args.worker[1],
                         error=f"{type(e).__name__}: {e}"[:4000], traceback=traceback.format_exc()[-6000:])
            print(entry["traceback"], flush=True)
        with open(args.result, "w") as f:
            json.dump(entry, f, indent=1)
        return 0
    if args.probe_one:
        try:
            r = probe(args.probe_one)
        except Exception as e:
            r = dict(family=args.probe_one, error=f"{type(e).__name__}: {e}",
                     traceback=traceback.format_exc()[-3000:])
        print("PROBE " + json.dumps(r), flush=True)
        return 0

    fams = [f for f in args.only.split(",") if f] or list(FAMILIES)
    unknown = [f for f in fams if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    v = versions()
    print("versions: " + json.dumps(v), flush=True)

    if args.probe:
        procs = []
        for fam in fams:
            procs.append((fam, subprocess.Popen([sys.executable, os.path.abspath(__file__), "--probe-one", fam],
                                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
            while sum(p.poll() is None for _, p in procs) >= args.jobs:
                time.sleep(0.2)
        for fam, p in procs:
            out, _ = p.communicate(timeout=args.timeout)
            line = [x for x in out.splitlines() if x.startswith("PROBE ")]
            print(line[-1] if line else f"PROBE {fam} died: {out[-2000:]}", flush=True)
        return 0

    root = os.path.join(args.work, "models")
    os.makedirs(root, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.monotonic()
    exporters = [e for e in args.exporters.split(",") if e]
    jobs = [(f, e) for f in fams for e in exporters]
    with open(os.path.join(root, "export.log"), "a") as log:
        log.write(f"versions: {json.dumps(v)}\n")
        results = run_jobs(jobs, root, args.jobs, args.timeout, log)
    ok = [r for r in results if "error" not in r]
    bad = [r for r in results if "error" in r]
    order = {f: i for i, f in enumerate(FAMILIES)}
    ok.sort(key=lambda r: (order[r["family"]], EXPORTERS.index(r["exporter"])))
    # Merge with an existing manifest (a rerun of some families replaces their entries).
    mpath = os.path.join(root, "manifest.json")
    if os.path.exists(mpath):
        old = json.load(open(mpath))
        redone = {(r["family"], r["exporter"]) for r in results}
        ok = [r for r in old.get("models", []) if (r["family"], r["exporter"]) not in redone] + ok
        bad = [r for r in old.get("failures", []) if (r["family"], r["exporter"]) not in redone] + bad
        ok.sort(key=lambda r: (order[r["family"]], EXPORTERS.index(r["exporter"])))
    for r in bad:  # a failed export leaves no half-written folder behind
        d = os.path.join(root, r["family"], r["exporter"])
        if os.path.isdir(d) and not any(m["family"] == r["family"] and m["exporter"] == r["exporter"] for m in ok):
            subprocess.run(["rm", "-rf", d])
    manifest = dict(format="halfguard-export-corpus", version=1, versions=v,
                    created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    layout="FAMILY/EXPORTER/model.onnx; calib/0, calib/1 (calibration) and verify/0 "
                           "(verification, with onnxruntime's FP32 output_K.pb) of input_K.pb in graph-input order",
                    models=ok, failures=[{k: r.get(k) for k in ("family", "exporter", "error", "failed_attempts")}
                                         for r in bad])
    with open(mpath, "w") as f:
        json.dump(manifest, f, indent=1)
    for f in os.listdir(root):
        if f.startswith(".") and f.endswith(".json"):
            os.remove(os.path.join(root, f))
    saved = dedupe(root)
    print(f"{len(ok)} models exported, {len(bad)} failures, in {time.monotonic() - t0:.0f} s; "
          f"deduplicated samples saved {saved / 1024:.0f} KB", flush=True)
    for r in bad:
        print(f"FAILED {r['family']}/{r['exporter']}: {r['error'][:600]}", flush=True)
    if not args.no_pack:
        parts = pack(root, args.out)
        for p in parts:
            print(f"wrote {p} ({os.path.getsize(p) / 1048576:.2f} MiB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
