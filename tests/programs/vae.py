"""A small VAE trained for a few steps, written as PyTorch code (the shape of PyTorch's VAE
example: fc encoder to mu and logvar, the reparameterization trick with randn_like, a sigmoid
decoder, binary cross-entropy summed plus the KL divergence to N(0, I), Adam, a per-sample loss
in the log line). The step is a function passed to torch.compile. Its noise is drawn outside the
step and passed in: a compiled step draws its own random numbers from tracegrad's generator,
whose stream is not torch's, so the runs could not be compared (eval draws with randn_like)."""
import torch
import torch.nn.functional as F
from torch import nn, optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(1)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 8)
        self.fc22 = nn.Linear(32, 8)
        self.fc3 = nn.Linear(8, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps=None):
        std = torch.exp(0.5 * logvar)
        if eps is None:
            eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps=None):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    # KL(q(z|x) || N(0, I)), in closed form (Kingma and Welling, appendix B)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)
images = torch.rand(16, 1, 8, 8).to(device)


def train_step(data, eps):
    optimizer.zero_grad()
    recon_batch, mu, logvar = model(data, eps)
    loss = loss_function(recon_batch, data, mu, logvar)
    loss.backward()
    optimizer.step()
    return loss.detach()


step = torch.compile(train_step)
model.train()
losses = []
for epoch in range(1, 7):
    loss = step(images, torch.randn(len(images), 8, device=device))
    losses.append(loss.item() / len(images))
    print(f"====> Epoch: {epoch} Average loss: {loss.item() / len(images):.4f}")

model.eval()
with torch.no_grad():
    mu, logvar = model.encode(images.view(-1, 64))
    sample = model.decode(mu)
    z = model.reparameterize(mu, logvar)

RESULTS = {"losses": losses, "mu_sum": mu.sum().item(), "logvar_sum": logvar.sum().item(),
           "sample_mean": sample.mean().item(),
           "z_sum": z.sum().item()}
