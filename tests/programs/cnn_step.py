"""An MNIST-style CNN classifier trained for a few steps, written as PyTorch code (the tutorial's
Net with conv/max-pool/dropout/log_softmax, nll_loss, SGD with momentum, a StepLR scheduler,
torch.Tensor(...) for constants, accuracy counted with argmax(dim=1, keepdim=True))."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 5 * 5, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
images = torch.randn(16, 1, 14, 14)
labels = torch.randint(0, 10, (16,))
mean, std = torch.Tensor([0.1307]), torch.Tensor([0.3081])
images = (images - mean) / std
losses, correct = [], 0
for epoch in range(5):
    model.train()
    optimizer.zero_grad()
    output = model(images)
    loss = F.nll_loss(output, labels)
    loss.backward()
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())
    pred = output.argmax(dim=1, keepdim=True)
    correct = pred.eq(labels.view_as(pred)).sum().item()
    print(f"epoch {epoch} loss {loss:.4f} correct {correct}/16 lr {scheduler.get_last_lr()[0]}")

RESULTS = {"losses": losses, "correct": correct, "grad_fn": loss.grad_fn.name(),
           "lr": scheduler.get_last_lr()[0]}
