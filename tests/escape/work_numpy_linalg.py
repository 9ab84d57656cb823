# escape: (workload) numpy linear algebra: inv, solve, eig, svd, matmul
# expect: pass
import numpy as np

rng = np.random.default_rng(0)
a = rng.standard_normal((200, 200)) + 200 * np.eye(200)
b = rng.standard_normal(200)
x = np.linalg.solve(a, b)
assert np.allclose(a @ x, b)
assert np.allclose(np.linalg.inv(a) @ a, np.eye(200), atol=1e-8)
s = (a + a.T) / 2
w, v = np.linalg.eigh(s)
assert np.allclose(s @ v, v * w, atol=1e-6)
w2 = np.linalg.eigvals(np.array([[2.0, 0.0], [0.0, 3.0]]))
assert sorted(w2.real) == [2.0, 3.0]
u, sv, vt = np.linalg.svd(a[:50, :40], full_matrices=False)
assert np.allclose((u * sv) @ vt, a[:50, :40])
big = rng.standard_normal((1000, 1000))
assert (big @ big.T).shape == (1000, 1000)
print("PASS")
