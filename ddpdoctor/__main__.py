from ddpdoctor.cli.app import main

main()
