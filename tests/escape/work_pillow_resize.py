# escape: (workload) Pillow: create, draw, resize and save images (PNG and JPEG), reopen
# expect: pass
from PIL import Image, ImageDraw

img = Image.new("RGB", (640, 480), (30, 60, 90))
ImageDraw.Draw(img).rectangle((10, 10, 200, 100), fill=(255, 0, 0))
small = img.resize((64, 48))
small.save("small.png")
img.save("big.jpg", quality=85)
with Image.open("small.png") as again:
    assert again.size == (64, 48)
    assert again.getpixel((63, 47)) == (30, 60, 90)
with Image.open("big.jpg") as j:
    assert j.format == "JPEG" and j.size == (640, 480)
print("PASS")
