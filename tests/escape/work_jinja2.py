# escape: (workload) Jinja2: render templates from a string and from files in the workdir
# expect: pass
import os

import jinja2

t = jinja2.Template("Hello {{ name }}! {% for i in items %}[{{ i }}]{% endfor %}")
assert t.render(name="world", items=[1, 2]) == "Hello world! [1][2]"
os.makedirs("templates")
with open("templates/page.html", "w") as f:
    f.write("{% extends 'base.html' %}{% block body %}{{ x | upper }}{% endblock %}")
with open("templates/base.html", "w") as f:
    f.write("<b>{% block body %}{% endblock %}</b>")
env = jinja2.Environment(loader=jinja2.FileSystemLoader("templates"), autoescape=True)
assert env.get_template("page.html").render(x="<ok>") == "<b>&lt;OK&gt;</b>"
print("PASS")
