# Release notes of nova-pmem-filters, built by reno from releasenotes/notes
# in the git history (tox -e releasenotes).
project = 'nova-pmem-filters release notes'
copyright = 'nova-pmem-filters developers'
extensions = ['reno.sphinxext']
source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = []
pygments_style = 'sphinx'
html_theme = 'alabaster'
html_static_path = ['_static']
