"""Reports of an output directory: ``run_report`` loads it and builds the document every
format renders; one module per format (console, markdown, JUnit XML, CSV, HTML), and
``formats`` picks one. Renderers only lay the document out.
"""
