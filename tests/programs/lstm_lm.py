"""A word-level LSTM language model trained for a few steps, written as PyTorch code (the shape of
PyTorch's word_language_model example: Embedding -> dropout -> LSTM(batch_first) -> Linear decoder,
truncated backpropagation through time with the hidden state detached between batches, gradient
clipping, Adam, perplexity from the loss). The step is a function passed to torch.compile."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
ntokens, emsize, nhid, nlayers, bptt, batch_size = 40, 16, 24, 2, 6, 4


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


model = RNNModel(ntokens, emsize, nhid, nlayers).to(device)
criterion = nn.NLLLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
corpus = torch.randint(ntokens, (batch_size, 5 * bptt + 1)).to(device)


def train_step(data, targets, hidden):
    optimizer.zero_grad()
    output, hidden = model(data, hidden)
    loss = criterion(output, targets.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    optimizer.step()
    return loss.detach(), hidden


step = torch.compile(train_step)
model.train()
hidden = model.init_hidden(batch_size)
losses = []
for batch, i in enumerate(range(0, corpus.size(1) - 1, bptt)):
    data, targets = corpus[:, i:i + bptt], corpus[:, i + 1:i + 1 + bptt]
    hidden = repackage_hidden(hidden)
    loss, hidden = step(data, targets, hidden)
    losses.append(loss.item())
    print(f"| batch {batch:3d} | loss {loss.item():5.2f} | ppl {math.exp(loss.item()):8.2f}")

model.eval()
with torch.no_grad():
    output, _ = model(corpus[:, :bptt], model.init_hidden(batch_size))
    eval_loss = criterion(output, corpus[:, 1:bptt + 1].reshape(-1)).item()

RESULTS = {"losses": losses, "eval_loss": eval_loss, "hidden_sum": hidden[0].sum().item(),
           "grad_fn": output.grad_fn is None}
