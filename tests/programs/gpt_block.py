"""A GPT block trained for a few steps, written as PyTorch code (nanoGPT's idioms: device
selection, a causal mask buffer, transpose(1, 2).contiguous().view(...), AdamW with weight
decay groups, grad clipping, a cosine schedule, f-string logging of the loss, torch.compile(model))."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
B, T, C, H, V = 4, 8, 32, 4, 50


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(b, t, H, c // H).transpose(1, 2)
        k = k.view(b, t, H, c // H).transpose(1, 2)
        v = v.view(b, t, H, c // H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.ln_1 = nn.LayerNorm(C)
        self.attn = SelfAttention()
        self.ln_2 = nn.LayerNorm(C)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(approximate="tanh"), nn.Linear(4 * C, C))
        self.lm_head = nn.Linear(C, V, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


model = Block().to(device)
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                              lr=1e-3, betas=(0.9, 0.95))
model = torch.compile(model)  # (nanoGPT compiles the model, after making its optimizer)
data = torch.randint(V, (B, T + 1))
x, y = data[:, :-1].contiguous().to(device), data[:, 1:].contiguous().to(device)
losses = []
for it in range(8):
    lr = 1e-3 * 0.5 * (1.0 + math.cos(math.pi * it / 8))
    for group in optimizer.param_groups:
        group["lr"] = lr
    logits, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}, lr {lr:.2e}")
    losses.append(float(f"{loss:.6f}"))

RESULTS = {"losses": losses, "grad_fn": loss.grad_fn.name(), "logits_sum": logits.detach().sum().item()}
